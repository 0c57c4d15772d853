import json

import pytest

from evenhand.evaluation.data.loaders import from_dataset, load_examples, write_examples
from evenhand.evaluation.data.schema import Document, Example
from evenhand.evaluation.errors import DataError
from evenhand.evaluation.io.jsonl import read_jsonl
from evenhand.evaluation.io.resumable import ResumableJsonl
from tests.conftest import shared_file


def test_fairsumm_amazon_loads_with_ordered_groups():
    examples = load_examples(shared_file("perspectivesumm/amazon_gold.json"))
    assert len(examples) == 60
    ex = examples[0]
    assert ex.attribute == "rating"
    assert ex.groups == ["1", "2", "3", "4", "5"]
    assert ex.documents[0].group == "5" and ex.documents[1].group == "4"
    assert len(ex.references) == 3
    # group_texts keeps every value, "" for values without documents
    texts = ex.group_texts()
    assert set(texts) == {"1", "2", "3", "4", "5"}
    assert ex.documents[0].text in texts["5"]


def test_fairsumm_yelp_sentiment_values():
    examples = load_examples(shared_file("perspectivesumm/yelp_gold.json"))
    assert len(examples) == 100
    assert examples[0].groups == ["pos", "neu", "neg"]
    assert all(d.group in {"pos", "neu", "neg"} for ex in examples for d in ex.documents)


def test_theflipside_two_perspectives_and_target():
    examples = load_examples(shared_file("theflipside/test.json"))
    assert len(examples) == 200
    ex = examples[0]
    assert [d.group for d in ex.documents] == ["left", "right"]
    assert ex.target == "left" and ex.prompt.startswith("Given texts")
    assert ex.meta["document"][:40] in ex.documents[0].text
    assert {e.target for e in examples} == {"left", "right"}


def _write(tmp_path, name, lines):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def test_jsonl_line_2_missing_text_names_line_and_field(tmp_path):
    path = _write(tmp_path, "bad.jsonl", [
        json.dumps({"id": "a", "documents": [{"text": "fine", "group": "x"}]}),
        json.dumps({"id": "b", "documents": [{"group": "x"}]}),
    ])
    with pytest.raises(DataError) as err:
        load_examples(path)
    assert f"{path}:2:" in str(err.value) and "`text`" in str(err.value)


@pytest.mark.parametrize("record, field", [
    ({"id": "a", "documents": []}, "`documents` is empty"),
    ({"id": "a", "documents": [{"text": "  "}]}, "`documents[0].text` is empty"),
    ({"id": "a"}, "missing field `documents`"),
    ({"id": "a", "documents": ["x"], "colour": 1}, "unknown field(s) ['colour']"),
    ({"id": "a", "documents": [{"text": "x", "group": "z"}], "group_values": ["p", "q"]},
     "not in `group_values`"),
])
def test_generic_jsonl_errors_name_the_field(tmp_path, record, field):
    path = _write(tmp_path, "e.jsonl", [json.dumps(record)])
    with pytest.raises(DataError, match=None) as err:
        load_examples(path)
    assert field in str(err.value) and f"{path}:1" in str(err.value)


def test_missing_file_and_unknown_suffix(tmp_path):
    with pytest.raises(DataError, match="no such file"):
        load_examples(tmp_path / "nope.jsonl")
    other = tmp_path / "x.txt"
    other.write_text("hi")
    with pytest.raises(DataError, match="unknown file type"):
        load_examples(other)


def test_csv_one_document_per_row(tmp_path):
    path = _write(tmp_path, "d.csv", [
        "example_id,text,group", "e1,Great food,pos", "e2,Slow service,neg", "e1,Bad wine,neg",
    ])
    examples = load_examples(path)
    assert [ex.id for ex in examples] == ["e1", "e2"]
    assert examples[0].texts == ["Great food", "Bad wine"]
    assert examples[0].labels == ["pos", "neg"]


def test_csv_missing_column(tmp_path):
    path = _write(tmp_path, "d.csv", ["example_id,body", "e1,x"])
    with pytest.raises(DataError, match="missing column `text`"):
        load_examples(path)


def test_roundtrip_jsonl_and_dataset(tmp_path):
    ex = Example("e1", [Document("a b", "x"), Document("c", "y")], attribute="side",
                 references=["ref"], target="x")
    path = write_examples(tmp_path / "out.jsonl", [ex])
    (back,) = load_examples(path)
    assert back == ex
    datasets = pytest.importorskip("datasets")
    ds = datasets.Dataset.from_list([ex.to_dict()])
    assert from_dataset(ds)[0].documents == ex.documents


def test_require_groups_errors():
    one = Example("e", [Document("a", "x"), Document("b", "x")])
    with pytest.raises(DataError, match="only one group"):
        one.require_groups()
    missing = Example("e", [Document("a", "x"), Document("b")])
    with pytest.raises(DataError, match=r"documents \[1\] have no `group`"):
        missing.require_groups()
    ok = Example("e", [Document("a", "x"), Document("b", "y")], group_values=["y", "x", "z"])
    assert ok.require_groups() == ["y", "x", "z"]


def test_resumable_jsonl_drops_torn_line_and_resumes(tmp_path):
    path = tmp_path / "r.jsonl"
    store = ResumableJsonl(path)
    store.append([{"id": "a", "v": 1}, {"id": "b", "v": 2}])
    with path.open("a") as f:
        f.write('{"id": "c", "v"')  # killed mid-write
    again = ResumableJsonl(path)
    assert again.done("a") and again.done("b") and not again.done("c")
    again.append([{"id": "c", "v": 3}])
    assert [r["id"] for r in read_jsonl(path)] == ["a", "b", "c"]
    fresh = ResumableJsonl(path, resume=False)
    assert not fresh.done("a") and len(read_jsonl(path)) == 3  # replaced at the first new record
    fresh.append([{"id": "z"}])
    assert read_jsonl(path) == [{"id": "z"}]


def test_csv_attribute_column_picks_groups_and_prompt_kind(tmp_path):
    """A `rating` column holds the groups, names the attribute and picks the reviews prompt."""
    from evenhand.decoding.prompts.templates import describe_kinds, prompt_kind

    path = _write(tmp_path, "r.csv", [
        "example_id,text,rating,stars_source", "p1,Great sound.,5,web", "p1,Broke in a week.,1,web",
    ])
    with pytest.warns(UserWarning, match=r"column\(s\) stars_source ignored"):
        (ex,) = load_examples(path)
    assert (ex.attribute, ex.labels) == ("rating", ["5", "1"])
    assert prompt_kind(ex).name == "reviews"
    assert describe_kinds([ex]) == "prompt kind: reviews (attribute rating)"


def test_csv_attribute_flag_and_attribute_column(tmp_path):
    path = _write(tmp_path, "s.csv", ["example_id,text,who,attribute", "d1,We must act.,Kim,x", "d1,No.,Lee,x"])
    with pytest.warns(UserWarning):  # `who` and `attribute`... `who` is not the groups without the flag
        (plain,) = load_examples(path)
    assert (plain.attribute, plain.labels) == ("x", [None, None])
    (ex,) = load_examples(path, attribute="who")  # the flag names the groups' column
    assert (ex.attribute, ex.labels) == ("who", ["Kim", "Lee"])
    grouped = _write(tmp_path, "g.csv", ["example_id,text,group", "d1,We must act.,Kim", "d1,No.,Lee"])
    (ex,) = load_examples(grouped, attribute="speaker")  # `group` column, attribute named by the flag
    assert (ex.attribute, ex.labels) == ("speaker", ["Kim", "Lee"])
    from evenhand.decoding.prompts.templates import describe_kinds

    assert describe_kinds([ex]) == "prompt kind: debate (attribute speaker)"
    with pytest.raises(DataError, match="no column `party` .*--attribute"):
        load_examples(path, attribute="party")
    two = _write(tmp_path, "t.csv", ["example_id,text,rating,sentiment", "e,a,5,pos"])
    with pytest.raises(DataError, match="`rating` and `sentiment` could each hold the groups"):
        load_examples(two)


def test_jsonl_attribute_flag_fills_missing_and_refuses_a_conflict(tmp_path):
    from evenhand.decoding.prompts.templates import describe_kinds

    path = tmp_path / "d.jsonl"
    path.write_text(json.dumps({"id": "a", "documents": [{"text": "Good.", "group": "5"}]}) + "\n")
    (bare,) = load_examples(path)
    assert describe_kinds([bare]) == ("prompt kind: texts (the examples name no attribute: give --attribute "
                                      "(rating, speaker...) or --prompt-kind)")
    (ex,) = load_examples(path, attribute="rating")
    assert ex.attribute == "rating" and describe_kinds([ex]) == "prompt kind: reviews (attribute rating)"
    path.write_text(json.dumps({"id": "a", "attribute": "party", "documents": ["x"]}) + "\n")
    with pytest.raises(DataError, match="attribute is 'party' but --attribute is 'rating'"):
        load_examples(path, attribute="rating")
