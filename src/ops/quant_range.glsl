// The (min, max) tree reduction of DynamicQuantizeLinear's range, shared by quant_dynamic.comp's
// passes, the packed GEMM's dynamic variants (quant_packed.comp) and their split-K reduce
// (quant_packed_reduce.comp). The includer declares RANGE_LOCAL (its workgroup size, a power of
// two), `shared vec2 range_tree[RANGE_LOCAL]` and, for reduce_range_partials, the partials as
// `buffer ... { vec2 range_partial[]; }`.

// The range of every invocation's `r`, seen by all of them.
vec2 tree_reduce_range(uint t, vec2 r) {
  range_tree[t] = r;
  barrier();
  for (uint s = RANGE_LOCAL / 2; s > 0; s >>= 1) {
    if (t < s)
      range_tree[t] = vec2(min(range_tree[t].x, range_tree[t + s].x),
                           max(range_tree[t].y, range_tree[t + s].y));
    barrier();
  }
  return range_tree[0];
}

#ifndef RANGE_NO_PARTIALS
// The range over the first `count` partials (the range always includes 0).
vec2 reduce_range_partials(uint t, int count) {
  vec2 r = vec2(0.0);
  for (uint i = t; i < uint(count); i += RANGE_LOCAL)
    r = vec2(min(r.x, range_partial[i].x), max(r.y, range_partial[i].y));
  return tree_reduce_range(t, r);
}
#endif
