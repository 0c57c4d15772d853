"""split_list: the one parser of comma-separated list options."""

import pytest

from evenhand.evaluation.data.lists import split_list


def test_strings_and_lists_give_the_same_stripped_items():
    assert split_list(" mint, fragments,,fairsumm ", "metrics") == ["mint", "fragments", "fairsumm"]
    assert split_list(["q_proj", " v_proj ", ""], "lora_target") == ["q_proj", "v_proj"]
    assert split_list([1.0, 2], "weights") == ["1.0", "2"]


def test_empty_raises_naming_the_option_unless_allowed():
    for empty in ("", " , ", [], None):
        with pytest.raises(ValueError, match="`scorers` is empty"):
            split_list(empty, "scorers")
        assert split_list(empty, "scorers", empty_ok=True) == []
