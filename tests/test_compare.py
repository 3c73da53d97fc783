"""harness/compare.py: the closeness rule per dtype as figures, and each line of the
message a student reads (issue 19: a float32 tolerance 100x looser went unnoticed by the
whole mistake catalog)."""
import pytest
import torch

from grader.harness import compare
from grader.harness.failures import StudentFailure


def failure(got, expected, **kw):
    with pytest.raises(StudentFailure) as caught:
        compare.expect_close(got, expected, "the output", **kw)
    return caught.value


def test_the_tolerances_are_the_documented_figures():
    assert compare.tolerance(torch.float32) == (1e-4, 1e-5)
    assert compare.tolerance(torch.float64) == (1e-7, 1e-9)
    assert compare.tolerance(torch.bfloat16) == (4e-2, 2e-2)
    assert compare.tolerance(torch.float16) == (5e-3, 1e-3)
    assert compare.tolerance(torch.int64) == (0.0, 0.0)  # integers and bools: exact
    assert compare.tolerance(torch.float32, 10) == pytest.approx((1e-3, 1e-4))


@pytest.mark.parametrize("dtype, inside, outside", [
    # |got - 1| <= atol + rtol * 1: float32 1.1e-4, float64 1.01e-7, float16 6e-3, bf16 6e-2
    (torch.float32, 1.0e-4, 1.3e-4),
    (torch.float64, 0.9e-7, 1.2e-7),
    (torch.float16, 4.9e-3, 7.9e-3),
    (torch.bfloat16, 3.9e-2, 7.9e-2),
])
def test_closeness_at_the_edge_of_each_dtype(dtype, inside, outside):
    one = torch.ones(3, dtype=dtype)
    near, far = one + inside, one + outside
    assert near[0] != one[0] and far[0] != near[0]  # representable in that dtype
    assert compare.same(near, one) and compare._close(near, one, *compare.tolerance(dtype))
    compare.expect_close(near, one, "x")
    assert not compare.same(far, one)
    failure(far, one)


def test_the_absolute_tolerance_decides_near_zero():
    zero = torch.zeros(2)
    assert compare.same(torch.full((2,), 0.9e-5), zero)
    assert not compare.same(torch.full((2,), 1.2e-5), zero)


def test_integers_must_be_equal():
    assert compare.same(torch.tensor([1, 2]), torch.tensor([1, 2]))
    assert not compare.same(torch.tensor([1, 3]), torch.tensor([1, 2]))
    failure(torch.tensor([1, 3]), torch.tensor([1, 2]))


def test_same_needs_the_same_shape_and_dtype_and_nan_only_when_asked():
    a = torch.tensor([1.0, float("nan")])
    assert not compare.same(a, a)
    assert compare.same(a, a.clone(), equal_nan=True)
    assert not compare.same(torch.ones(2), torch.ones(3))
    assert not compare.same(torch.ones(2), torch.ones(1, 2))
    assert not compare.same(torch.ones(2), torch.ones(2, dtype=torch.float64))
    assert compare.same(torch.ones(2) * 1.0005, torch.ones(2), scale=10)
    assert not compare.same(torch.ones(2) * 1.0005, torch.ones(2))


def test_a_sparse_tensor_goes_to_assert_close():
    dense = torch.eye(3)
    assert compare._close(dense.to_sparse(), dense.to_sparse(), 1e-4, 1e-5)
    assert not compare._close((2 * dense).to_sparse(), dense.to_sparse(), 1e-4, 1e-5)


def test_a_wrong_shape_says_both_shapes_and_a_hint():
    message = str(failure(torch.zeros(3, 2), torch.zeros(2, 3)))
    assert message.splitlines() == [
        "the output: expected shape (2, 3), got (3, 2).",
        "  Same sizes in another order: two axes look swapped (check permute/transpose and "
        "the unsqueeze positions)."]
    assert "arranged differently" in str(failure(torch.zeros(6), torch.zeros(2, 3)))
    assert "fewer axes" in str(failure(torch.zeros(2), torch.zeros(2, 3)))
    assert "an extra axis" in str(failure(torch.zeros(2, 3, 2), torch.zeros(2, 3)))
    assert str(failure(torch.zeros(0, 3), torch.zeros(0, 2))).splitlines() == [
        "the output: expected shape (0, 2), got (0, 3)."]
    assert "extra axis" not in str(failure(torch.zeros(7), torch.zeros(2, 3)))
    assert "fewer axes" not in str(failure(torch.zeros(2, 4), torch.zeros(2, 3)))


def test_a_wrong_dtype_says_both():
    message = str(failure(torch.zeros(2, dtype=torch.float64), torch.zeros(2)))
    assert message.startswith("the output: expected dtype float32, got float64.\n"
                              "  The result should keep the dtype of the inputs")


def test_wrong_values_are_counted_located_and_shown():
    expected = torch.tensor([[0.5, 0.5], [1.0, 0.0]])
    got = torch.tensor([[0.5, 0.5], [0.75, 0.25]])
    lines = str(failure(got, expected, context=("rows of two",), hints=("a hint", ""))).splitlines()
    assert lines == [
        "the output: wrong values.",
        "  2 of 4 entries differ, largest difference 0.25.",
        "  First difference at [1, 0]: expected 1, got 0.75.",
        "  Expected: [[0.5, 0.5], [1, 0]]",
        "  Got:      [[0.5, 0.5], [0.75, 0.25]]",
        "  a hint",
        "  About this case: rows of two",
    ]


def test_a_large_tensor_is_not_printed_whole():
    expected = torch.zeros(25)
    lines = str(failure(expected + 1, expected)).splitlines()
    assert lines[1] == "  25 of 25 entries differ, largest difference 1."
    assert not any(line.startswith("  Expected:") for line in lines)
    assert compare.show(torch.zeros(24)) is not None and compare.show(torch.zeros(25)) is None
    assert compare.show(torch.full((24,), -2**62)) is None  # its text would be 400+ characters
    assert compare.show(torch.full((17,), -2**62)) is not None  # 17 x 22 characters: 374


def test_nan_is_named_with_its_first_position():
    expected = torch.zeros(2, 2)
    got = torch.tensor([[0.0, 0.0], [float("nan"), 0.0]])
    lines = str(failure(got, expected, weights=True)).splitlines()
    assert lines[1] == "  1 of 4 entries differ."  # no finite difference to report
    assert lines[2] == "  First difference at [1, 0]: expected 0, got nan."
    assert any(line.startswith("  Your result has NaN (first at [1, 0])") for line in lines)
    assert not any("sum to 1" in line for line in lines)  # said once: NaN first


def test_weights_rows_that_do_not_sum_to_one_and_masked_keys_that_leak():
    expected = torch.tensor([[1.0, 0.0], [0.5, 0.5]])
    got = torch.tensor([[0.9, 0.1], [0.5, 0.498]])
    lines = str(failure(got, expected, weights=True)).splitlines()
    assert "  Each row of attention weights should sum to 1; row [1] sums to 0.998." in lines
    # row [1] has no masked key: no evidence of masking after the softmax, no such advice
    assert not any("Mask the scores" in line for line in lines)
    assert "  Masked keys (at or past the valid length) must get weight 0; position [0, 1] " \
           "got 0.1." in lines
    lines = str(failure(got, expected)).splitlines()  # not weights: no such hints
    assert not any("sum to 1" in line or "Masked keys" in line for line in lines)
    close = torch.tensor([[1.0, 0.0], [0.5, 0.5009]])  # off by 9e-4: within 1e-3 of 1
    assert not any("sum to 1" in line for line in str(failure(close, expected, weights=True)).splitlines())


def test_a_known_mistake_is_named_only_when_it_reproduces_the_result():
    expected = torch.tensor([0.5, 0.5])
    got = torch.tensor([1.0, 0.0])
    suspects = [("you forgot the mask", None), ("you masked with 0", torch.tensor([0.9, 0.1])),
                ("you kept the scores", torch.tensor([1.0, 0.0])), ("later", got)]
    lines = str(failure(got, expected, suspects=suspects)).splitlines()
    named = [line for line in lines if line.startswith("  Your result is exactly")]
    assert named == ["  Your result is exactly what you get if you kept the scores."]


def test_the_heatmap_shows_the_first_slab_that_differs():
    expected = torch.zeros(3, 2, 2)
    got = expected.clone()
    got[1, 0, 1] = 0.25
    picture = failure(got, expected, weights=True).heatmap
    assert picture["expected"] == [[0.0, 0.0], [0.0, 0.0]]
    assert picture["got"] == [[0.0, 0.25], [0.0, 0.0]]
    assert picture["title"].startswith("the output (slab ") and " of 3" in picture["title"]
    assert failure(got, expected).heatmap is None  # not weights
    single = compare.heatmap(torch.ones(2, 2), torch.zeros(2, 2), "w")
    assert single["title"] == "w" and single["got"] == [[1.0, 1.0], [1.0, 1.0]]  # one slab
    big = compare.heatmap(torch.ones(40, 40), torch.zeros(40, 40), "w")
    assert len(big["got"]) == 32 and len(big["got"][0]) == 32
    assert compare.heatmap(torch.ones(2), torch.zeros(2), "w") is None
    assert compare.heatmap(torch.ones(0, 2), torch.zeros(0, 2), "w") is None


def test_values_are_formatted_for_reading():
    assert compare.fmt_value(float("nan")) == "nan"
    assert compare.fmt_value(1 / 3) == "0.333333"
    assert compare.fmt_value(7) == "7"
    assert compare.fmt_index(torch.tensor([1, 2])) == "[1, 2]"


def test_expect_true():
    compare.expect_true(True, "never shown")
    with pytest.raises(StudentFailure) as caught:
        compare.expect_true(False, "it failed", context=("case a",))
    assert str(caught.value) == "it failed\n  About this case: case a"


def test_heatmap_values_keep_six_decimals():
    picture = compare.heatmap(torch.full((2, 2), 1 / 3), torch.zeros(2, 2), "w")
    assert picture["got"][0][0] == 0.333333


def test_a_single_row_of_weights_is_checked_too():
    message = str(failure(torch.tensor([0.5, 0.4]), torch.tensor([0.5, 0.5]), weights=True))
    assert "should sum to 1;" in message and "sums to 0.9." in message
