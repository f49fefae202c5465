"""Misuses of the shape and indexing operators get PyTorch's messages (one test per misuse)."""
import pytest

import nn


def x23():
    return nn.zeros(2, 3)


def idx(*values):
    return nn.tensor(list(values))


# ----------------------------------------------------------------------------- shapes

def test_view_size_mismatch():
    with pytest.raises(RuntimeError, match=r"shape '\[4\]' is invalid for input of size 6"):
        x23().view(4)


def test_view_of_a_transposed_tensor():
    with pytest.raises(RuntimeError, match=r"Use .reshape\(...\) instead"):
        x23().t().view(6)


def test_two_inferred_sizes():
    with pytest.raises(RuntimeError, match="only one dimension can be inferred"):
        x23().reshape(-1, -1)


def test_permute_wrong_length():
    with pytest.raises(RuntimeError, match=r"input.dim\(\) = 2 is not equal to len\(dims\) = 1"):
        x23().permute(0)


def test_permute_duplicate_dims():
    with pytest.raises(RuntimeError, match="duplicate dims are not allowed"):
        x23().permute(1, 1)


def test_expand_fewer_sizes():
    with pytest.raises(RuntimeError, match=r"the number of sizes provided \(1\) must be greater "
                                           r"or equal to the number of dimensions in the tensor"):
        x23().expand(3)


def test_expand_non_singleton():
    with pytest.raises(RuntimeError, match=r"expanded size of the tensor \(4\) must match the "
                                           r"existing size \(3\) at non-singleton dimension 1"):
        x23().expand(2, 4)


def test_expand_minus_one_in_a_new_dimension():
    with pytest.raises(RuntimeError, match="isn't allowed in a leading, non-existing dimension"):
        x23().expand(-1, 2, 3)


def test_squeeze_dimension_out_of_range():
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of "
                                         r"\[-2, 1\], but got 3\)"):
        x23().squeeze(3)


def test_flatten_start_after_end():
    with pytest.raises(RuntimeError, match="start_dim cannot come after end_dim"):
        x23().flatten(1, 0)


def test_unflatten_sizes_do_not_multiply():
    with pytest.raises(RuntimeError, match=r"sizes \[2, 2\] don't multiply up to the size of "
                                           r"dim 1 \(3\)"):
        x23().unflatten(1, (2, 2))


def test_movedim_length_mismatch():
    with pytest.raises(RuntimeError, match="should contain the same number of dims"):
        x23().movedim((0, 1), (0,))


def test_movedim_repeated_dim():
    with pytest.raises(RuntimeError, match="repeated dim"):
        x23().movedim((0, 0), (0, 1))


def test_narrow_past_the_end():
    with pytest.raises(RuntimeError, match=r"start \(2\) \+ length \(3\) exceeds dimension "
                                           r"size \(3\)"):
        x23().narrow(1, 2, 3)


def test_narrow_start_out_of_range():
    with pytest.raises(IndexError, match="start out of range"):
        x23().narrow(1, 5, 0)


def test_cat_empty_list():
    with pytest.raises(ValueError, match="expected a non-empty list of Tensors"):
        nn.cat([])


def test_cat_rank_mismatch():
    with pytest.raises(RuntimeError, match="Tensors must have same number of dimensions: got 2 "
                                           "and 1"):
        nn.cat([x23(), nn.zeros(3)])


def test_cat_size_mismatch():
    with pytest.raises(RuntimeError, match=r"Sizes of tensors must match except in dimension 0. "
                                           r"Expected size 3 but got size 4 for tensor number 1"):
        nn.cat([x23(), nn.zeros(3, 4)])


def test_cat_of_a_non_tensor():
    with pytest.raises(TypeError, match="must be a sequence of Tensors, but element 1 is list"):
        nn.cat([x23(), [1, 2, 3]])


def test_stack_unequal_shapes():
    with pytest.raises(RuntimeError, match=r"stack expects each tensor to be equal size, but got "
                                           r"\[2, 3\] at entry 0 and \[3, 2\] at entry 1"):
        nn.stack([x23(), nn.zeros(3, 2)])


def test_split_sizes_do_not_sum():
    with pytest.raises(RuntimeError, match=r"split_with_sizes expects split_sizes to sum exactly "
                                           r"to 3"):
        x23().split([1, 1], 1)


def test_split_size_zero():
    with pytest.raises(RuntimeError, match="split_size can only be 0 if dimension size is 0"):
        x23().split(0)


def test_chunk_count_zero():
    with pytest.raises(RuntimeError, match="chunk expects `chunks` to be greater than 0"):
        x23().chunk(0)


def test_unbind_of_a_scalar():
    with pytest.raises(IndexError, match="tensor has no dimensions"):
        nn.tensor(1.0).unbind()


def test_repeat_too_few_sizes():
    with pytest.raises(RuntimeError, match="Number of dimensions of repeat dims can not be "
                                           "smaller than number of dimensions of tensor"):
        x23().repeat(2)


def test_roll_shifts_and_dims_misaligned():
    with pytest.raises(RuntimeError, match="shifts and dimensions must align. shifts: 2, dims:1"):
        x23().roll((1, 2), (0,))


def test_diagonal_identical_dims():
    with pytest.raises(RuntimeError, match="diagonal dimensions cannot be identical 1, 1"):
        x23().diagonal(0, 1, 1)


def test_tril_of_a_vector():
    with pytest.raises(RuntimeError, match="tril: input tensor must have at least 2 dimensions"):
        nn.zeros(3).tril()


# ----------------------------------------------------------------------------- indexing

def test_index_out_of_bounds():
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 2"):
        x23()[5]


def test_negative_index_out_of_bounds():
    with pytest.raises(IndexError, match="index -4 is out of bounds for dimension 1 with "
                                         "size 3"):
        x23()[:, -4]


def test_too_many_indices():
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 2"):
        x23()[0, 0, 0]


def test_two_ellipses():
    with pytest.raises(IndexError, match=r"an index can only have a single ellipsis"):
        x23()[..., ...]


def test_negative_step():
    with pytest.raises(ValueError, match="step must be greater than zero"):
        x23()[::-1]


def test_index_tensor_out_of_bounds():
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 2"):
        x23()[idx(0, 5)]


def test_float_index_tensor():
    with pytest.raises(IndexError, match="tensors used as indices must be long, int, byte or "
                                         "bool tensors"):
        x23()[nn.tensor([1.0])]


def test_unsupported_index_type():
    with pytest.raises(IndexError, match=r"only integers, slices .* are valid indices"):
        x23()[1.5]


def test_mask_shape_mismatch():
    with pytest.raises(IndexError, match=r"The shape of the mask \[3\] at index 0 does not match "
                                         r"the shape of the indexed tensor \[2, 3\] at index 0"):
        x23()[nn.tensor([True, False, True])]


def test_index_tensors_do_not_broadcast():
    with pytest.raises(IndexError, match=r"shape mismatch: indexing tensors could not be "
                                         r"broadcast together with shapes \[2\], \[3\]"):
        x23()[idx(0, 1), idx(0, 1, 2)]


def test_setitem_value_does_not_fit():
    with pytest.raises(RuntimeError, match=r"shape mismatch: value tensor of shape \[2\] cannot "
                                           r"be broadcast to indexing result of shape \[3\]"):
        x23()[0] = nn.ones(2)


def test_setitem_on_an_expanded_view():
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor "
                                           "refers to a single memory location"):
        nn.zeros(3).expand(2, 3)[0] = 1.0


def test_setitem_on_a_leaf_that_requires_grad():
    w = nn.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in "
                                           "an in-place operation"):
        w[0] = 1.0


# ----------------------------------------------------------------------------- gather, scatter

def test_gather_float_index():
    with pytest.raises(RuntimeError, match=r"gather\(\): Expected dtype int32/int64 for index"):
        x23().gather(1, nn.tensor([[0.0]]))


def test_gather_rank_mismatch():
    with pytest.raises(RuntimeError, match="Index tensor must have the same number of dimensions "
                                           "as input tensor"):
        x23().gather(1, idx(0))


def test_gather_index_out_of_bounds():
    with pytest.raises(RuntimeError, match="index 5 is out of bounds for dimension 1 with size 3"):
        x23().gather(1, nn.tensor([[5]]))


def test_gather_index_larger_than_input():
    with pytest.raises(RuntimeError, match=r"Expected index \[3, 1\] to be no larger than self "
                                           r"\[2, 3\] apart from dimension 1"):
        x23().gather(1, nn.zeros(3, 1, dtype="int64"))


def test_scatter_index_larger_than_src():
    with pytest.raises(RuntimeError, match=r"to be no larger size than src \[1, 1\]"):
        x23().scatter(0, nn.zeros(1, 2, dtype="int64"), nn.ones(1, 1))


def test_scatter_dtype_mismatch():
    with pytest.raises(RuntimeError, match=r"Expected self.dtype to be equal to src.dtype"):
        x23().scatter(0, nn.zeros(1, 1, dtype="int64"), nn.ones(1, 1, dtype="float64"))


def test_scatter_unknown_reduce():
    with pytest.raises(RuntimeError, match="reduce argument must be either add or multiply"):
        x23().scatter(0, nn.zeros(1, 1, dtype="int64"), nn.ones(1, 1), reduce="max")


def test_scatter_with_reduce_has_no_derivative():
    w = nn.ones(2, 3, requires_grad=True)
    y = x23().scatter(0, nn.zeros(1, 1, dtype="int64"), w, reduce="add")
    with pytest.raises(RuntimeError, match="derivative for aten::scatter is not implemented"):
        y.sum().backward()


def test_index_select_matrix_index():
    with pytest.raises(IndexError, match=r"index_select\(\): Index is supposed to be a vector"):
        x23().index_select(0, nn.tensor([[0]]))


def test_index_select_out_of_range():
    with pytest.raises(IndexError, match="index out of range in self"):
        x23().index_select(0, idx(2))


def test_index_add_count_mismatch():
    with pytest.raises(RuntimeError, match=r"Number of indices \(1\) should be equal to "
                                           r"source.size\(dim\): \(2\), for dim: 0"):
        x23().index_add(0, idx(0), nn.ones(2, 3))


def test_index_add_dtype_mismatch():
    with pytest.raises(RuntimeError, match=r"self \(float32\) and source \(float64\) must have "
                                           r"the same scalar type"):
        x23().index_add(0, idx(0), nn.ones(1, 3, dtype="float64"))


def test_index_fill_value_with_dimensions():
    with pytest.raises(RuntimeError, match="only supports a 0-dimensional value tensor"):
        x23().index_fill(0, idx(0), nn.ones(2))


def test_take_out_of_range():
    with pytest.raises(IndexError, match="out of range: tried to access index 6 on a tensor of "
                                         "6 elements"):
        x23().take(idx(6))


def test_masked_select_float_mask():
    with pytest.raises(RuntimeError, match="masked_select: expected BoolTensor for mask"):
        x23().masked_select(nn.ones(2, 3))


# ----------------------------------------------------------------------------- more functions

def test_select_index_out_of_range():
    with pytest.raises(IndexError, match=r"select\(\): index 5 out of range for tensor of size "
                                         r"\[2, 3\] at dimension 0"):
        nn.select(x23(), 0, 5)


def test_tensor_split_zero_sections():
    with pytest.raises(RuntimeError, match="number of sections must be larger than 0, got 0"):
        nn.tensor_split(x23(), 0)


def test_hsplit_not_divisible():
    with pytest.raises(RuntimeError, match="torch.hsplit attempted to split along dimension 1, "
                                           "but the size of the dimension 3 is not divisible"):
        nn.hsplit(x23(), 2)


def test_vsplit_of_a_vector():
    with pytest.raises(RuntimeError, match="torch.vsplit requires a tensor with at least 2 "
                                           "dimension, but got a tensor with 1 dimensions!"):
        nn.vsplit(nn.zeros(3), 1)


def test_rot90_same_dims():
    with pytest.raises(RuntimeError, match="expected rotation dims to be different, but got "
                                           "dim0 = 0 and dim1 = 0"):
        nn.rot90(x23(), 1, (0, 0))


def test_diag_of_3d():
    with pytest.raises(RuntimeError, match=r"diag\(\): Supports 1D or 2D tensors. Got 3D"):
        nn.diag(nn.zeros(2, 2, 2))


def test_trace_of_3d():
    with pytest.raises(RuntimeError, match="trace: expected a matrix, but got tensor with dim 3"):
        nn.trace(nn.zeros(2, 2, 2))


def test_t_of_3d():
    with pytest.raises(RuntimeError, match=r"t\(\) expects a tensor with <= 2 dimensions, but "
                                           "self is 3D"):
        nn.t(nn.zeros(2, 2, 2))


def test_take_along_dim_float_indices():
    with pytest.raises(RuntimeError, match=r"torch.take_along_dim\(\): dtype of indices should "
                                           "be Long but got Float"):
        nn.take_along_dim(x23(), nn.tensor([[0.0]]), 1)


def test_cartesian_prod_of_a_matrix():
    with pytest.raises(RuntimeError, match=r"Expect a 1D vector, but got shape \[2, 3\]"):
        nn.cartesian_prod(x23())


def test_block_diag_of_3d():
    with pytest.raises(RuntimeError, match="torch.block_diag: Input tensors must have 2 or "
                                           "fewer dimensions. Input 0 has 3 dimensions"):
        nn.block_diag(nn.zeros(2, 2, 2))


def test_cross_without_length_3():
    with pytest.raises(RuntimeError, match="linalg.cross: inputs dimension -1 must have length "
                                           "3. Got 2 and 2"):
        nn.linalg.cross(nn.zeros(2, 2), nn.zeros(2, 2))


def test_tensordot_mismatch():
    with pytest.raises(RuntimeError, match="contracted dimensions need to match, but first has "
                                           "size 3 in dim 1 and second has size 2 in dim 0"):
        nn.tensordot(x23(), nn.zeros(2, 2), dims=([1], [0]))


def test_dstack_empty():
    with pytest.raises(RuntimeError, match="dstack expects a non-empty TensorList"):
        nn.dstack([])


def test_quantile_q_out_of_range():
    with pytest.raises(RuntimeError, match=r"quantile\(\) q must be in the range \[0, 1\] but "
                                           "got 1.5"):
        nn.quantile(nn.arange(5.0), 1.5)


def test_quantile_of_integers():
    with pytest.raises(RuntimeError, match=r"quantile\(\) input tensor must be either float or "
                                           "double dtype"):
        nn.quantile(nn.arange(5), 0.5)


def test_renorm_of_a_vector():
    with pytest.raises(RuntimeError, match="renorm: input needs at least 2 dimensions, got 1 "
                                           "dimensions"):
        nn.renorm(nn.arange(5.0), 2, 0, 1)


def test_cov_of_3d():
    with pytest.raises(RuntimeError, match=r"cov\(\): expected input to have two or fewer "
                                           "dimensions but got an input with 3 dimensions"):
        nn.cov(nn.zeros(2, 2, 2))


def test_aminmax_of_empty():
    with pytest.raises(RuntimeError, match=r"aminmax\(\): cannot compute aminmax over an empty "
                                           "dimension"):
        nn.aminmax(nn.zeros(0))


def test_logcumsumexp_of_integers():
    with pytest.raises(NotImplementedError, match="\"logcumsumexp_out_cpu\" not implemented "
                                                  "for 'Long'"):
        nn.logcumsumexp(nn.arange(3), 0)


def test_masked_scatter_short_source():
    with pytest.raises(RuntimeError, match="Number of elements of source < number of ones in "
                                           "mask"):
        nn.masked_scatter(x23(), nn.tensor([True, False, True]), nn.zeros(1))


def test_index_copy_count_mismatch():
    with pytest.raises(IndexError, match=r"index_copy_\(\): Number of indices \(1\) should be "
                                         r"equal to source.size\(dim\) \(2\)"):
        nn.index_copy(x23(), 1, idx(0), nn.ones(2, 2))


def test_bincount_negative():
    with pytest.raises(RuntimeError, match="bincount only supports 1-d non-negative integral "
                                           "inputs."):
        nn.bincount(idx(1, -3))


def test_histc_min_above_max():
    with pytest.raises(RuntimeError, match="torch.histc: max must be larger than min"):
        nn.histc(nn.tensor([1.0, 2.0]), 3, 2, 1)


def test_searchsorted_bad_side():
    with pytest.raises(RuntimeError, match=r"torch.searchsorted\(\): side can only be 'left' "
                                           "or 'right' but got x"):
        nn.searchsorted(nn.tensor([1.0, 2.0]), nn.tensor([1.0]), side="x")


def test_bucketize_2d_boundaries():
    with pytest.raises(RuntimeError, match=r"boundaries tensor must be 1 dimension, but got "
                                           r"dim\(2\)"):
        nn.bucketize(nn.tensor([1.0]), nn.tensor([[1.0]]))


def test_heaviside_mixed_dtypes():
    with pytest.raises(RuntimeError, match="heaviside is not yet implemented for tensors with "
                                           "different dtypes."):
        nn.heaviside(nn.tensor([1.0, 0.0]), idx(1))


def test_frexp_of_integers():
    with pytest.raises(RuntimeError, match=r"torch.frexp\(\) only supports floating-point "
                                           "dtypes"):
        nn.frexp(idx(1, 0))


def test_addmv_size_mismatch():
    with pytest.raises(RuntimeError, match=r"size mismatch, got input \(2\), mat \(2x3\), vec "
                                           r"\(2\)"):
        nn.addmv(nn.ones(2), nn.ones(2, 3), nn.ones(2))


def test_cov_fweights_count():
    with pytest.raises(RuntimeError, match=r"cov\(\): expected fweights to have the same numel "
                                           "as there are observations in the input but got "
                                           "2 != 3"):
        nn.cov(x23(), fweights=idx(1, 2))
