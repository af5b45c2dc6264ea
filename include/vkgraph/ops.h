#pragma once
// Operators: each adds one or more nodes to a ComputeGraph and returns the output tensor.
// Shape rules are checked here, at build time, with errors that name the op and the shapes.
// One header per op family; a new family is a new header plus one line here.
//
// Float ops take float32 or float16 tensors, all operands of one dtype, and return that dtype.
// Float16 tensors are stored in 16 bits (storageBuffer16BitAccess) and computed in float32;
// sums and split-K partials stay float32. Exceptions say so: cumsum, topk, compare and the
// scatter reductions take float32 only.
#include "vkgraph/ops/conv.h"
#include "vkgraph/ops/data_movement.h"
#include "vkgraph/ops/elementwise.h"
#include "vkgraph/ops/matmul.h"
#include "vkgraph/ops/reduce.h"
#include "vkgraph/ops/quant.h"
#include "vkgraph/ops/bitshift.h"
#include "vkgraph/ops/det.h"
#include "vkgraph/ops/grid_sample.h"
#include "vkgraph/ops/loss.h"
#include "vkgraph/ops/lrn.h"
#include "vkgraph/ops/max_pool_indices.h"
#include "vkgraph/ops/nd_index.h"
#include "vkgraph/ops/one_hot.h"
#include "vkgraph/ops/pointwise.h"
#include "vkgraph/ops/recurrent.h"
#include "vkgraph/ops/reverse_sequence.h"
#include "vkgraph/ops/roi_align.h"
#include "vkgraph/ops/tfidf.h"
