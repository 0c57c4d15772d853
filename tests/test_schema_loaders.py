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
