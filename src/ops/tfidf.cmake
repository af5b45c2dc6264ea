# TfIdfVectorizer's n-gram counting over Int32 or Int64 token ids.
vkgraph_shader_family(tfidf AXIS dtype DTYPE)
foreach(dtype i32 i64)
  string(TOUPPER ${dtype} DTYPE)
  vkgraph_variant(tfidf tfidf_${dtype} ${CMAKE_CURRENT_LIST_DIR}/tfidf.comp KEY ${dtype}
                  DEFINES DTYPE_${DTYPE}=1)
endforeach()
