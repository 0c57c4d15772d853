"""LM-likelihood scorers (lm-likelihood, lm-pmi, fluency) against direct, unpadded forward passes."""

import json
import math

import pytest
import torch
from conftest import CONTROLLED_ENTRIES, write_controlled

from evenhand.cli import main
from evenhand.decoding.models import tiny_model
from evenhand.decoding.prompts.templates import DEFAULT_SYSTEM, chat_prompt
from evenhand.evaluation.data.schema import Document, Example
from evenhand.evaluation.scoring.registry import get_scorer
from evenhand.evaluation.text.sentences import alignscore_chunks
from evenhand.rerank.lm_prefix import continuation_logprobs
from evenhand.rerank.scorers.lm_likelihood import sentence_of_tokens

SOURCE = ["The council approved the budget.", "Critics said taxes will rise."]
SOURCE_TEXT = "The council approved the budget.\n\nCritics said taxes will rise."
OTHER = "Wages rose last year. Prices rose faster."
SUMMARIES = ["The budget passed.", "Taxes will rise, critics said, after the council vote.", ""]
NAMES = ("lm-likelihood", "lm-pmi", "fluency")


def _ids(tok, text):
    return tok(text, add_special_tokens=False)["input_ids"]


def _direct(model, prefix, suffix):
    """log p of each suffix token from one unpadded forward of prefix + suffix."""
    with torch.no_grad():
        if model.config.is_encoder_decoder:
            start = model.config.decoder_start_token_id
            logits = model(input_ids=torch.tensor([prefix]),
                           decoder_input_ids=torch.tensor([[start] + suffix[:-1]])).logits[0]
        else:
            logits = model(input_ids=torch.tensor([prefix + suffix])).logits[0, len(prefix) - 1 : -1]
    return logits.float().log_softmax(-1).gather(-1, torch.tensor(suffix)[:, None]).squeeze(-1)


def _scorers(model, tok, name="tiny", **config):
    return {n: get_scorer(n, progress=False, **config).use_model(model, tok, name) for n in NAMES}


def test_zero_logits_give_minus_log_vocab_and_zero_pmi(tokenizer):
    model, tok = tiny_model("causal", seed=0, tokenizer=tokenizer, tie_word_embeddings=False)
    with torch.no_grad():
        model.lm_head.weight.zero_()
    expected = -math.log(model.config.vocab_size)
    scorers = _scorers(model, tok)
    sources = [SOURCE] * 3
    for name in ("lm-likelihood", "fluency"):
        assert scorers[name].score(sources, SUMMARIES) == pytest.approx([expected] * 3, abs=1e-5)
    details = scorers["lm-pmi"].score_details(sources, SUMMARIES)
    assert [d["score"] for d in details] == pytest.approx([0.0] * 3, abs=1e-6)
    assert [d["n_tokens"] for d in details] == [len(_ids(tok, SUMMARIES[0])), len(_ids(tok, SUMMARIES[1])), 1]
    assert [d["empty"] for d in details] == [False, False, True]


def test_prompt_wording_and_scores_equal_an_unpadded_forward(tiny_causal):
    model, tok = tiny_causal
    scorers = _scorers(model, tok)
    lm = scorers["lm-likelihood"]
    user = SOURCE_TEXT + "\n\nSummarize the text above in a few sentences."
    cond_prefix = _ids(tok, chat_prompt(tok, user, system=DEFAULT_SYSTEM))
    free_prefix = _ids(tok, chat_prompt(tok, "Write a short summary.", system=DEFAULT_SYSTEM))
    assert lm.prefix_ids(SOURCE_TEXT) == cond_prefix and lm.prefix_ids(None) == free_prefix
    assert tok.decode(cond_prefix).endswith("<|im_start|>assistant\n")
    end = _ids(tok, "<|im_end|>")
    details = {n: s.score_details([SOURCE] * 3, SUMMARIES) for n, s in scorers.items()}
    for i, summary in enumerate(SUMMARIES):
        suffix = _ids(tok, summary) or end  # an empty summary is scored by the end token
        cond = _direct(model, cond_prefix, suffix).mean().item()
        free = _direct(model, free_prefix, suffix).mean().item()
        assert details["lm-likelihood"][i]["score"] == pytest.approx(cond, abs=1e-5)
        assert details["fluency"][i]["score"] == pytest.approx(free, abs=1e-5)
        pmi = details["lm-pmi"][i]
        assert pmi["score"] == pytest.approx(cond - free, abs=1e-5)
        assert pmi["conditional"] == pytest.approx(cond, abs=1e-5)
        assert pmi["unconditional"] == pytest.approx(free, abs=1e-5)
        assert pmi["n_tokens"] == len(suffix) and pmi["chunks"] == 1 and pmi["model"] == "tiny"
    # the summaries' scores differ: the comparison above is not between constants
    assert len({round(d["score"], 5) for d in details["lm-likelihood"]}) == 3


def test_continuation_logprobs_batched_rows_equal_single_rows(tiny_causal):
    model, tok = tiny_causal
    prefix = _ids(tok, "A short prompt:")
    suffixes = [_ids(tok, s) for s in ("One.", "Two words here and more.", "x")]
    batched = continuation_logprobs(model, prefix, suffixes)
    for suffix, row in zip(suffixes, batched):
        (single,) = continuation_logprobs(model, prefix, [suffix])
        assert row.shape == (len(suffix),)
        assert torch.allclose(row, single, atol=1e-5)
        assert torch.allclose(row, _direct(model, prefix, suffix), atol=1e-5)
    with pytest.raises(ValueError, match="suffix"):
        continuation_logprobs(model, prefix, [[]])


def test_batched_scores_equal_one_pair_at_a_time(tiny_causal):
    model, tok = tiny_causal
    long_source = " ".join(f"Speaker {i} said the plan number {i} was fine." for i in range(12))
    sources = [SOURCE, OTHER, SOURCE, long_source, OTHER, SOURCE]
    outputs = ["The budget passed.", "Prices rose.", "", "Speakers liked plan 3. Plan 7 too.",
               "Wages fell. Prices rose faster than wages.", "Critics said taxes will rise."]
    for name, scorer in _scorers(model, tok, max_source_tokens=40, chunk_words=30).items():
        batch = scorer.score_details(sources, outputs)
        scorer.cache_clear()
        single = [scorer.score_details([s], [o])[0] for s, o in zip(sources, outputs)]
        assert [b["score"] for b in batch] == pytest.approx([s["score"] for s in single], abs=1e-5)
        if name != "fluency":
            assert [b["chunks"] for b in batch] == [1, 1, 1, 4, 1, 1]


def test_sentence_of_tokens_follows_the_sentence_splitter(tokenizer):
    text = "Mr. Smith left.  He was tired!\nYes."
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    owner = sentence_of_tokens(text, enc["offset_mapping"])
    pieces = ["", "", ""]
    for (start, end), s in zip(enc["offset_mapping"], owner):
        pieces[s] += text[start:end]
    assert [p.strip() for p in pieces] == ["Mr. Smith left.", "He was tired!", "Yes."]


def test_long_source_takes_each_sentence_from_its_best_chunk(tokenizer):
    # a sharper random model than the default, so chunks give clearly different log-probs
    model, tok = tiny_model("causal", seed=3, tokenizer=tokenizer, initializer_range=0.5)
    docs = ["The mayor cut taxes today. Schools lost money fast. Parents were very angry.",
            "The river flooded last night. Farmers lost their crops. Roads were closed quickly."]
    summary = "Parents were angry about schools. Farmers lost crops in the flood."
    config = dict(max_source_tokens=20, chunk_words=20)
    lm = get_scorer("lm-likelihood", progress=False, **config).use_model(model, tok, "tiny")
    pmi = get_scorer("lm-pmi", progress=False, **config).use_model(model, tok, "tiny")
    text = "\n\n".join(docs)
    assert len(_ids(tok, text)) > 20
    chunks = alignscore_chunks(text, 20)
    assert len(chunks) == 2 and all(len(_ids(tok, c)) <= 20 for c in chunks)
    suffix = _ids(tok, summary)
    first = _ids(tok, "Parents were angry about schools.")
    assert suffix[: len(first)] == first
    spans = [slice(0, len(first)), slice(len(first), len(suffix))]
    rows = []
    for chunk in chunks:
        user = chunk + "\n\nSummarize the text above in a few sentences."
        rows.append(_direct(model, _ids(tok, chat_prompt(tok, user, system=DEFAULT_SYSTEM)), suffix))
    best = [max(range(2), key=lambda c, s=s: rows[c][s].mean().item()) for s in spans]
    expected = sum(rows[b][s].sum().item() for b, s in zip(best, spans)) / len(suffix)
    (d,) = lm.score_details([docs], [summary])
    assert d["chunks"] == 2 and d["n_tokens"] == len(suffix)
    assert d["score"] == pytest.approx(expected, abs=1e-5)
    # per sentence, not per summary: better than the best single chunk for the whole summary
    assert best[0] != best[1]
    assert d["score"] > max(r.mean().item() for r in rows) + 1e-4
    (p,) = pmi.score_details([docs], [summary])
    assert p["conditional"] == pytest.approx(expected, abs=1e-5) and p["chunks"] == 2


def test_seq2seq_is_bartscore_encoder_source_decoder_summary(tokenizer):
    model, tok = tiny_model("seq2seq", seed=0, tokenizer=tokenizer)
    scorers = _scorers(model, tok, name="tiny-t5")
    source_ids = tok(SOURCE_TEXT)["input_ids"]
    empty_ids = tok("")["input_ids"] or [tok.eos_token_id]
    for summary in SUMMARIES[:2]:
        suffix = _ids(tok, summary)
        cond = _direct(model, source_ids, suffix).mean().item()
        free = _direct(model, empty_ids, suffix).mean().item()
        (d,) = scorers["lm-pmi"].score_details([SOURCE], [summary])
        assert math.isfinite(d["score"])
        assert scorers["lm-likelihood"].score_one(SOURCE, summary) == pytest.approx(cond, abs=1e-5)
        assert scorers["fluency"].score_one(SOURCE, summary) == pytest.approx(free, abs=1e-5)
        assert d["score"] == pytest.approx(cond - free, abs=1e-5)
    batch = scorers["lm-likelihood"].score([SOURCE, OTHER, SOURCE], SUMMARIES)
    scorers["lm-likelihood"].cache_clear()
    single = [scorers["lm-likelihood"].score_one(s, o) for s, o in zip([SOURCE, OTHER, SOURCE], SUMMARIES)]
    assert batch == pytest.approx(single, abs=1e-5)


def test_cache_key_names_the_model(tiny_causal):
    model, tok = tiny_causal
    a = get_scorer("fluency", progress=False).use_model(model, tok, "model-a")
    b = get_scorer("fluency", progress=False).use_model(model, tok, "model-b")
    assert a.model_id == "model-a" and get_scorer("fluency").model_id == "smollm2-135m-instruct"
    ex = Example("e", [Document("Text.")])
    assert a._key(ex, "S.") != b._key(ex, "S.")
    changed = get_scorer("fluency", no_source_instruction="Summarize.").use_model(model, tok, "model-a")
    assert a._key(ex, "S.") != changed._key(ex, "S.")


@pytest.mark.parametrize(
    ("field", "value"),
    [("batch_size", 0), ("max_source_tokens", 8), ("chunk_words", 0), ("instruction", " "),
     ("no_source_instruction", ""), ("model", ""), ("system", 3), ("device", "")],
)
def test_bad_config_names_the_field(field, value):
    for name in NAMES:
        with pytest.raises(ValueError, match=f"`{field}`"):
            get_scorer(name, **{field: value})


def test_meta_eval_command_with_a_saved_tiny_lm(tmp_path, tiny_causal, capsys):
    model, tok = tiny_causal
    model.save_pretrained(tmp_path / "tiny")
    tok.save_pretrained(tmp_path / "tiny")
    entries = CONTROLLED_ENTRIES
    data = write_controlled(tmp_path / "controlled.json")
    out = tmp_path / "meta.jsonl"
    code = main(["meta-eval", "--data", str(data), "--scorers", "lm-pmi,lm-likelihood,fluency",
                 "--lm-model", str(tmp_path / "tiny"), "--device", "cpu", "--out", str(out),
                 "--n-bootstrap", "20", "--score-cache", "none"])
    assert code == 0
    rows = {r["scorer"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert set(rows) == set(NAMES)
    assert all(r["n"] == 5 and r["backend"] == str(tmp_path / "tiny") for r in rows.values())
    # the same weights as the in-memory model: the same scores, and pmi = likelihood - fluency
    direct = get_scorer("lm-likelihood", progress=False).use_model(model, tok, "tiny")
    sources = [e["source"] for e in entries for _ in e["summaries"]]
    summaries = [s["summary"] for e in entries for s in e["summaries"]]
    assert rows["lm-likelihood"]["scores"] == pytest.approx(direct.score(sources, summaries), abs=1e-5)
    difference = [a - b for a, b in zip(rows["lm-likelihood"]["scores"], rows["fluency"]["scores"])]
    assert rows["lm-pmi"]["scores"] == pytest.approx(difference, abs=1e-5)
    assert "lm-pmi" in capsys.readouterr().out


def test_packed_continuations_equal_padded_ones_and_unpadded_forwards(tiny_causal):
    import torch

    from evenhand.rerank.lm_prefix import logits_after_prefix, packed_logits_after_prefix

    model, _ = tiny_causal
    prefix = [5, 17, 99, 3, 250, 8]
    suffixes = [[11, 12, 13, 14, 15], [40], [], [7, 7, 7]]
    first, packed = packed_logits_after_prefix(model, prefix, suffixes)
    pfirst, padded = logits_after_prefix(model, prefix, [s for s in suffixes if s])
    assert packed.shape[0] == sum(map(len, suffixes))
    assert torch.allclose(first, pfirst[0, 0], atol=1e-5)
    start, row = 0, 0
    for suffix in suffixes:
        if not suffix:
            continue
        with torch.no_grad():
            direct = model(input_ids=torch.tensor([prefix + suffix])).logits[0, len(prefix):]
        got = packed[start : start + len(suffix)]
        assert torch.allclose(got, direct, atol=1e-4)
        assert torch.allclose(got, padded[row, : len(suffix)], atol=1e-4)
        start, row = start + len(suffix), row + 1


def test_branched_logprobs_equal_unpadded_forwards_of_stem_branch_and_suffix(tiny_causal):
    from evenhand.rerank.lm_prefix import branched_logprobs

    model, _ = tiny_causal
    stem = [5, 17, 99]
    branches = [([3, 250, 8], [[11, 12, 13, 14, 15], [40]]), ([6], []), ([9, 9, 2, 71, 30], [[7, 7, 7]]),
                ([12, 12], [[40], [1, 2]])]
    got = branched_logprobs(model, stem, branches)
    assert [len(g) for g in got] == [2, 0, 1, 2]  # per branch, one row per suffix (none for the second)
    for (branch, suffixes), rows in zip(branches, got):
        for suffix, row in zip(suffixes, rows):
            assert row.shape == (len(suffix),)
            assert torch.allclose(row, _direct(model, stem + branch, suffix), atol=1e-4)
    # the same suffix after two branches reads two different prompts
    assert not torch.allclose(got[0][1], got[3][0], atol=1e-3)
    for bad in (([], branches), (stem, [([], [[1]])]), (stem, [([1], [[]])])):
        with pytest.raises(ValueError, match="stem|branch"):
            branched_logprobs(model, *bad)


def test_lm_scorers_share_their_passes(tiny_causal):
    """lm-pmi + lm-likelihood + fluency together: the same values as alone, lm-pmi's forward passes only."""
    model, tok = tiny_causal
    sources = [SOURCE, SOURCE, [OTHER]]
    summaries = SUMMARIES[:2] + ["Prices rose."]
    calls = []
    hook = model.register_forward_hook(lambda *args: calls.append(1))
    try:
        alone, counts = {}, {}
        for name in NAMES:  # a distinct name per scorer: nothing shared
            calls.clear()
            alone[name] = get_scorer(name, progress=False).use_model(model, tok, f"alone-{name}").score(sources, summaries)
            counts[name] = len(calls)
        calls.clear()
        together = _scorers(model, tok, "together")
        values = {name: together[name].score(sources, summaries) for name in ("lm-pmi", "lm-likelihood", "fluency")}
        shared = len(calls)
    finally:
        hook.remove()
    for name in NAMES:
        assert values[name] == alone[name]  # the very same floats
    # two sources (one prefix + one packed forward each) and one no-source prefix + packed forward
    assert counts == {"lm-likelihood": 4, "fluency": 2, "lm-pmi": 6}
    assert shared == counts["lm-pmi"] < sum(counts.values())
    # pmi is exactly likelihood − fluency of the shared computations
    assert values["lm-pmi"] == pytest.approx([a - b for a, b in zip(values["lm-likelihood"], values["fluency"])], abs=1e-12)


def test_a_sentence_cut_to_max_source_tokens_is_warned_once(tiny_causal):
    """Never silent: a source sentence longer than ``max_source_tokens`` is cut, and one warning says so."""
    model, tok = tiny_causal
    run_on = "Speaker one said " + "the plan was fine and " * 30 + "that was all."
    scorer = _scorers(model, tok, max_source_tokens=40, chunk_words=30)["lm-pmi"]
    with pytest.warns(UserWarning, match=r"holds a sentence of \d+ tokens, more than `max_source_tokens` \(40\)") as seen:
        rows = scorer.score_details([run_on, run_on + " Again.", "Short one."], ["The plan was fine.", "Fine.", "Ok."])
    assert len([w for w in seen if "max_source_tokens" in str(w.message)]) == 1
    # and each row scored on a cut source says so, in its record and in evaluate's columns
    assert [r.get("source_cut") for r in rows] == ["1 source chunk(s) cut to their first 40 tokens"] * 2 + [None]
    assert scorer.columns(rows[0])["lm-pmi_source_cut"] == rows[0]["source_cut"]
    assert "lm-pmi_source_cut" not in scorer.columns(rows[2])
