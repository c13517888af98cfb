"""The variants of a sweep: --vary read with brackets and repeats, crossed or zipped, named and filed."""
from __future__ import annotations

import pytest

from inproc.errors import UsageError
from inproc.profiles.spec import load_profile
from inproc.sweep.plan import Vary, parse_varies, plan_variants, split_values
from tests.conftest import DEFAULT_PROFILE


def test_values_split_at_commas_outside_brackets_and_quotes():
    assert split_values("4,8", "x") == ("4", "8")
    assert split_values("[1,2,4,8], [1,2]", "x") == ("[1,2,4,8]", "[1,2]")
    assert split_values("{a = 1, b = 2},'x,y'", "x") == ("{a = 1, b = 2}", "'x,y'")


def test_keys_of_every_kind_and_repeated_flags():
    varies = parse_varies(("max_num_seqs=4,8", "compilation-config.cudagraph_capture_sizes=[1,2,4],[1,2]",
                           "env.OMP_NUM_THREADS=1", "env.OMP_NUM_THREADS=2,3"))
    assert varies == (Vary("max-num-seqs", ("4", "8")),  # one spelling: the CLI name
                      Vary("compilation-config.cudagraph_capture_sizes", ("[1,2,4]", "[1,2]")),  # sub-key as written
                      Vary("env.OMP_NUM_THREADS", ("1", "2,3")))  # repeated: one whole value per flag
    assert [v.argument for v in varies] == ["max-num-seqs", "compilation-config", None]


def test_product_first_key_slowest_and_zip_pairs():
    varies = parse_varies(("max-num-seqs=4,8", "block-size=16,32"))
    product = plan_variants(varies)
    assert [v.sets for v in product] == [("max-num-seqs=4", "block-size=16"), ("max-num-seqs=4", "block-size=32"),
                                         ("max-num-seqs=8", "block-size=16"), ("max-num-seqs=8", "block-size=32")]
    assert [v.index for v in product] == [1, 2, 3, 4]
    zipped = plan_variants(varies, zipped=True)
    assert [v.name for v in zipped] == ["max-num-seqs=4 block-size=16", "max-num-seqs=8 block-size=32"]
    with pytest.raises(UsageError, match="max-num-seqs has 2, block-size has 1"):
        plan_variants(parse_varies(("max-num-seqs=4,8", "block-size=16")), zipped=True)


def test_variant_names_labels_and_files():
    (v, w) = plan_variants(parse_varies(("compilation-config.cudagraph_capture_sizes=[1,2,4,8],[1]",)))
    assert v.name == "compilation-config.cudagraph_capture_sizes=[1,2,4,8]" and v.label == "[1,2,4,8]"
    assert v.file == "01-cudagraph_capture_sizes=_1_2_4_8.json" and v.log == "01-cudagraph_capture_sizes=_1_2_4_8.log"
    assert w.file.startswith("02-") and len({v.file, w.file}) == 2


def test_every_variant_is_an_override_inproc_run_reads():
    profile = load_profile(DEFAULT_PROFILE)
    variants = plan_variants(parse_varies(("compilation-config.cudagraph_capture_sizes=[1,2,4]", "env.FOO=a,b",
                                           "env.FOO=c", "max-num-seqs=4")))
    first = profile.with_overrides(variants[0].sets)
    assert first.engine_args["compilation-config"] == {"cudagraph_capture_sizes": [1, 2, 4]}
    assert first.env["FOO"] == "a,b" and first.engine_args["max-num-seqs"] == 4
    assert profile.with_overrides(variants[1].sets).env["FOO"] == "c"


@pytest.mark.parametrize("items,needle", [
    ((), "at least one --vary"),
    (("max-num-seqs",), "Give KEY=V1,V2"),
    (("=4",), "Give KEY=V1,V2"),
    (("max-num-seqs=",), "no values"),
    (("max num=1",), "Bad --vary key 'max num'"),
    (("env.=1",), "Bad --vary key 'env.'"),
    (("env.A-B=1",), "Bad --vary key 'env.A-B'"),
    (("max-num-seqs=4,,8",), "an empty value"),
    (("max-num-seqs=4,",), "an empty value"),
    (("a=[1,2",), "an unclosed bracket"),
    (("a='x",), "an unclosed quote"),
    (("a=1]",), "']' closes no bracket"),
    (("max-num-seqs=4,4",), "the value '4' is given twice"),
])
def test_bad_vary_names_the_bad_value(items, needle):
    with pytest.raises(UsageError, match=needle):
        parse_varies(items)
