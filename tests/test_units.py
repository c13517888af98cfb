import pytest

from inproc.errors import UsageError
from inproc.units import format_cell, format_tokens, parse_cell_list, parse_int_list, parse_token_list, parse_tokens


@pytest.mark.parametrize("text,value", [("8K", 8192), ("1M", 1048576), ("1019K", 1043456), ("1048512", 1048512), (" 16k ", 16384)])
def test_context_sizes(text, value):
    assert parse_tokens(text) == value


@pytest.mark.parametrize("text", ["12Q", "", "0", "-5", "1.5K", "K"])
def test_bad_context_sizes_name_the_value(text):
    with pytest.raises(UsageError) as e:
        parse_tokens(text)
    assert repr(text) in str(e.value)


def test_lists_and_labels():
    assert parse_token_list("256,1K,4K") == (256, 1024, 4096)
    assert parse_int_list("1,2,4") == (1, 2, 4)
    with pytest.raises(UsageError, match="'0'"):
        parse_int_list("1,0")
    assert [format_tokens(n) for n in (8192, 1043456, 1048576, 1048512)] == ["8K", "1019K", "1024K", "1,048,512"]


def test_cell_lists():
    assert parse_cell_list("8Kx1, 8Kx16,256X8") == ((8192, 1), (8192, 16), (256, 8))
    assert [format_cell(L, C) for L, C in ((8192, 16), (1000, 3))] == ["8Kx16", "1000x3"]
    assert parse_cell_list(",".join(format_cell(L, C) for L, C in ((8192, 16), (1000, 3)))) == ((8192, 16), (1000, 3))


@pytest.mark.parametrize("text,needle", [("8K", "Bad cell '8K'"), ("8Kx", "Bad cell '8Kx'"), ("x8", "Bad cell 'x8'"),
                                         ("8Kx0", "at least 1"), ("8Qx1", "Bad cell '8Qx1'"), ("8Kx1x2", "'8Kx1x2'"),
                                         ("8Kx1,8kx1", "listed twice"), (",", "Empty cell list")])
def test_bad_cells_name_the_value(text, needle):
    with pytest.raises(UsageError, match=needle):
        parse_cell_list(text)
