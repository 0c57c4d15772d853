"""``llm-coverage`` and ``llm-faithfulness``: a causal LM grading a summary on a 1-5 rubric.

The rubrics and steps are those of Ri, Deas & McKeown (2025), reworded. The judge
reads the chat-formatted prompt and its next-token distribution over the digits
"1".."5" gives the score (``mode="expected"``, default):

    score = sum_d d * p(d) / sum_d p(d),   d in {1..5}

renormalized over the five digit tokens; the argmax digit and the digits'
total probability mass (``digit_mass``: low values mean the judge wanted to say
something else) are reported too. ``mode="parse"`` is the paper's: greedy
generation, the first integer 1-5 in the reply, 1 when there is none.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...decoding.engines.http import ServerConfig
from ...evaluation.data.schema import Example
from ...evaluation.errors import DataError
from ...evaluation.scoring.registry import register
from ..judge_scores import expected_digit, parse_score
from ..lm_prefix import LmBackedConfig, LmBackedScorer

DIGITS = ("1", "2", "3", "4", "5")

COVERAGE_PROMPT = """You are grading a summary. Judge how completely the generated summary \
conveys the main arguments of the source article. This is about coverage: whether the \
content is complete, not whether it is factually accurate.

Coverage scale:
1. No coverage: none of the article's main arguments appear in the summary.
2. Low coverage: a few of the main arguments appear; most are left out.
3. Medium coverage: roughly half of the main arguments appear.
4. High coverage: most of the main arguments appear; only a few are missing.
5. Full coverage: every major point and argument of the article appears; nothing important is left out.

Work through these steps:
1. Read the source article and list its major points, arguments and facts.
2. Read the summary and list each point or argument it makes.
3. Check, for every major point of the article, whether the summary contains it; count the points covered and the points missing.
4. Choose a score from 1 (no coverage) to 5 (full coverage) from how many of the main arguments the summary contains.
5. Reply with the score alone (1, 2, 3, 4 or 5), with no explanation or other text.

---

# Source article:

{article}

# Summary:

{summary}

# Coverage score (1-5 only):"""

FAITHFULNESS_PROMPT = """You are grading a summary. Judge how faithfully the generated summary \
represents the information in the source article. Faithful means free of factual errors: \
every claim of the summary is stated outright, strongly implied, or logically entailed by \
the article.

Faithfulness scale:
1. Unfaithful: the summary is almost all wrong or unrelated to the article.
2. Mostly unfaithful: a few arguments or details are right, but most of it is wrong or missing.
3. Neutral: about half of the important points are right, with notable errors or omissions.
4. Mostly faithful: most of the article's arguments are represented correctly, with only minor errors or omissions.
5. Fully faithful: all the main arguments are represented correctly and nothing contradicts the article or lacks support in it.

Work through these steps:
1. Read the source article and note its main points, arguments and facts.
2. Read the summary and list every claim or statement it makes.
3. For each claim, check that the article supports it explicitly or logically; mark claims that contradict the article or cannot be found in it; check whether arguments central to the article are left out.
4. Choose a score from 1 (unfaithful) to 5 (fully faithful) from how many claims agree with (and do not contradict) the article and whether the key points are there.
5. Reply with the score alone (1, 2, 3, 4 or 5), with no explanation or other text.

---

# Source article:

{article}

# Summary:

{summary}

# Faithfulness score (1-5 only):"""


@dataclass
class JudgeConfig(LmBackedConfig):
    """Settings of the LLM judges."""

    model: str = field(
        default="smollm2-135m-instruct",
        metadata={
            "help": "Judge model: embedded alias, local folder, cached HF id, or a server URL "
            "http://HOST:PORT/v1[#MODEL] (docs/serving.md)."
        },
    )
    mode: str = field(default="expected", metadata={"help": "'expected' (digit expectation) or 'parse' (generate, first number)."})
    max_prompt_tokens: int = field(default=4096, metadata={"help": "Prompt budget; longer articles are cut at the end."})
    batch_size: int = field(default=8, metadata={"help": "Prompts per forward pass."})
    max_concurrency: int = field(
        default=4, metadata={"help": "Server URL only: judge requests in flight at once."}
    )
    timeout: float = field(
        default=120.0, metadata={"help": "Server URL only: seconds to wait for one response."}
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        ServerConfig(max_concurrency=self.max_concurrency, timeout=self.timeout)  # validates both
        if self.mode not in ("expected", "parse"):
            raise ValueError(f"`mode` must be 'expected' or 'parse', got {self.mode!r}")
        if self.max_prompt_tokens < 64:
            raise ValueError(f"`max_prompt_tokens` must be an int >= 64, got {self.max_prompt_tokens}")


class LlmJudge(LmBackedScorer[JudgeConfig]):
    """A 1-5 rubric judge; subclasses set ``template``.

    ``config.model`` may be a server URL (``http://HOST:PORT/v1[#MODEL]``): the
    judge then reads the server's ``top_logprobs`` (``rerank.server_judge``).
    """

    Config = JudgeConfig
    cli_options = {
        "judge_model": "model", "device": "device", "engine": "engine",
        "max_concurrency": "max_concurrency", "server_timeout": "timeout",
    }
    template: str = ""
    #: (tokens read, tokens in all) of the last prompt's source when it was cut to fit, else None
    _cut: tuple[int, int] | None = None
    _warned_cut: bool = False
    detail_fields = ("argmax", "digit_mass", "judge")
    serves = True
    server_reads = "logprob_token_ids"

    def prompt_parts(self, example: Example, summaries: list[str]) -> tuple[list[int], list[list[int]]]:
        """Token ids of the shared prompt prefix (rubric + article) and of each summary's suffix.

        The chat-formatted prompt is cut where the summary goes; prefix and suffix are
        tokenized separately (always, so a pair scores the same alone or in a batch).
        The article is cut at the end to keep the longest prompt within
        ``max_prompt_tokens``.
        """
        from ...decoding.prompts.templates import chat_prompt, plain_text

        _, tok = self._load()
        marker = "\x00SUMMARY\x00"

        def parts(article: str) -> tuple[str, str]:
            text = chat_prompt(tok, self.template.format(article=article, summary=marker))
            before, after = text.split(marker)
            return before, after

        def ids(text: str) -> list[int]:
            return tok(text, add_special_tokens=False)["input_ids"]

        article = example.source_text("\n\n")
        before, after = parts("")
        suffixes = [ids(plain_text(tok, summary) + after) for summary in summaries]
        limit = self.prompt_limit()
        budget = limit - len(ids(before)) - max(map(len, suffixes))
        if budget < 16:
            raise ValueError(
                f"a summary alone fills the judge's prompt budget ({self.config.max_prompt_tokens} "
                "tokens); raise `max_prompt_tokens`"
            )
        article_ids = ids(article)
        longest = max(map(len, suffixes))
        while True:  # cutting and re-tokenizing in context can shift the count by a few tokens
            text = article if len(article_ids) <= budget else tok.decode(
                article_ids[:budget], skip_special_tokens=True
            )
            prefix = ids(parts(text)[0])
            overflow = len(prefix) + longest - limit
            if overflow <= 0:
                # stated, never silent: the rows say how much of the source the judge read
                self._cut = (min(budget, len(article_ids)), len(article_ids)) if len(article_ids) > budget else None
                return prefix, suffixes
            budget = min(budget, len(article_ids)) - overflow
            if budget < 1:
                raise ValueError(
                    f"the prompt does not fit `max_prompt_tokens` ({self.config.max_prompt_tokens}); "
                    "raise it"
                )

    def prompt_limit(self) -> int:
        """The prompt budget: ``max_prompt_tokens``, or the judge model's context when that is smaller."""
        limit = self.config.max_prompt_tokens
        model = self._load()[0]
        if hasattr(model, "config"):
            from ...decoding.engines.transformers import context_limit

            context = context_limit(model)
            if context is not None:
                limit = min(limit, context - 8)  # room for the parse mode's 8 reply tokens
        return limit

    def digit_ids(self) -> list[int]:
        """Token ids of "1".."5"; each digit must be a single token."""
        _, tok = self._load()
        ids = []
        for d in DIGITS:
            enc = tok(d, add_special_tokens=False)["input_ids"]
            if len(enc) != 1:
                raise ValueError(f"the judge's tokenizer splits digit {d!r} into {enc}; use another judge")
            ids.append(enc[0])
        return ids

    def reads_server_prompts(self) -> bool:
        """Whether this judge reads its server URL's prompt log-probs on token ids (exact digit probabilities).

        ``mode="expected"`` on a server that returns the log-probs of given next tokens
        (``logprob_token_ids``, vLLM) and whose model's tokenizer loads here (``/v1/models``
        root): the in-process prompt's token ids, and the five digits' log-probs after it
        (:meth:`ServerPromptLogprobs.next_logprobs`). Otherwise (llama.cpp, a tokenizer not
        here) the chat ``top_logprobs`` path (``rerank.server_judge``). Decided once per
        client; an unreachable server raises.
        """
        if self.server is None or self.config.mode != "expected":
            return False
        memo = self.server.memo
        if "judge_prompts" not in memo:
            from ..lm_prefix import server_prompt_model

            self.server.model_entry()  # an unreachable server raises here, not as "no log-probs"
            try:
                server_prompt_model(self.server, self.server_reads)
                memo["judge_prompts"] = True
            except DataError:
                memo["judge_prompts"] = False
        return bool(memo["judge_prompts"])

    def _score_batch(self, sources: list[Example], outputs: list[str]) -> list[dict[str, Any]]:
        if self.server is not None and not self.reads_server_prompts():
            from ..server_judge import judge_via_server

            return judge_via_server(self.server, self.template, sources, outputs, self.config.mode)
        groups: dict[int, list[int]] = {}
        first: dict[str, int] = {}
        for i, ex in enumerate(sources):
            key = repr([(d.text, d.group) for d in ex.documents])
            groups.setdefault(first.setdefault(key, i), []).append(i)
        results: list[dict[str, Any]] = [{} for _ in outputs]
        cut = 0
        for lead, members in groups.items():
            self._cut = None
            prefix, suffixes = self.prompt_parts(sources[lead], [outputs[i] for i in members])
            if self.config.mode == "parse":
                rows = self._parse(prefix, suffixes)
            else:
                rows = self._expected(prefix, suffixes)
            for i, row in zip(members, rows):
                if self._cut is not None:
                    row["source_cut"] = f"read the first {self._cut[0]} of {self._cut[1]} source tokens"
                results[i] = row
            cut += self._cut is not None
        if cut and not self._warned_cut:
            import warnings

            self._warned_cut = True
            warnings.warn(
                f"the judge ({self.model_id}) read only the start of {cut} source(s) longer than its prompt "
                f"budget ({self.prompt_limit()} tokens); their rows say so in `source_cut`; shorten them or "
                "raise `max_prompt_tokens` (within the judge's context)", stacklevel=2)
        return results

    def next_token_probs(self, prefix: list[int], suffixes: list[list[int]]) -> Any:
        """P(next token) after prefix + each suffix: the prefix runs once, its KV cache is shared.

        Suffixes are left-padded after the prefix (``rerank.lm_prefix.logits_after_prefix``);
        every row equals an unpadded forward pass of its own prompt.
        """
        from ..lm_prefix import logits_after_prefix

        model, tok = self._load()
        pad = tok.pad_token_id if tok.pad_token_id is not None else 0
        _, logits = logits_after_prefix(model, prefix, suffixes, pad_left=True, pad_id=pad, logits_to_keep=1)
        return logits[:, -1, :].float().softmax(dim=-1)

    def digit_probs(self, prefix: list[int], suffixes: list[list[int]]) -> Any:
        """(k, 5) P("1".."5" next) after prefix + each suffix, from the full softmax.

        In-process: one forward (``next_token_probs``). vLLM, in-process or a server: one request
        per summary with the digits as ``logprob_token_ids``, so every digit's probability is exact
        even when it is not among the top tokens.
        """
        import torch

        digits = self.digit_ids()
        if not self.on_vllm and self.server is None:
            return self.next_token_probs(prefix, suffixes)[:, digits].cpu()
        values = self._load()[0].next_logprobs([prefix + suffix for suffix in suffixes], digits)
        return torch.tensor(values, dtype=torch.float32).exp()

    def _expected(self, prefix: list[int], suffixes: list[list[int]]) -> list[dict[str, Any]]:
        digit_probs = self.digit_probs(prefix, suffixes)
        results = []
        for row in digit_probs.tolist():
            value, argmax = expected_digit(row)
            results.append(
                {"score": value, "argmax": argmax, "digit_mass": sum(row), "judge": self.model_id}
            )
        return results

    def _parse(self, prefix: list[int], suffixes: list[list[int]]) -> list[dict[str, Any]]:
        import torch

        model, tok = self._load()
        prompts = [prefix + suffix for suffix in suffixes]
        if self.on_vllm:  # greedy, 8 tokens, as in-process
            params = model.sampling_params(max_tokens=8, temperature=0.0, stop_token_ids=[tok.eos_token_id])
            replies = tok.batch_decode([c.token_ids for c in model.generate(prompts, params)], skip_special_tokens=True)
            return [
                {"score": float(parse_score(r)), "argmax": parse_score(r), "digit_mass": None,
                 "judge": self._model_name, "reply": r.strip()}
                for r in replies
            ]
        device = next(model.parameters()).device
        width = max(map(len, prompts))
        pad = tok.pad_token_id if tok.pad_token_id is not None else 0
        ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts], device=device)
        mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts], device=device)
        with torch.no_grad():
            out = model.generate(
                input_ids=ids, attention_mask=mask, max_new_tokens=8, do_sample=False, num_beams=1,
                pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id,
            )
        replies = tok.batch_decode(out[:, width:], skip_special_tokens=True)
        return [
            {"score": float(parse_score(r)), "argmax": parse_score(r), "digit_mass": None,
             "judge": self._model_name, "reply": r.strip()}
            for r in replies
        ]


@register("llm-coverage")
class LlmCoverage(LlmJudge):
    """How completely the summary covers the article's main arguments (1-5)."""

    template = COVERAGE_PROMPT


@register("llm-faithfulness")
class LlmFaithfulness(LlmJudge):
    """How free of unsupported or contradicting claims the summary is (1-5)."""

    template = FAITHFULNESS_PROMPT
