"""Hook fairness-aware decoding into ``generate``: per batch, the group tables, the
group-coverage processor (α) and the fairness-aware beam search (β, and its
meaning-level term W: document blocks embedded once per batch).

See ``docs/fair_decoding.md`` for the objective and the knobs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..evaluation.data.schema import Example
from .settings import BatchHooks, FairnessSettings


def check_examples(examples: Sequence[Example], config: FairnessSettings) -> None:
    """Raise DataError before any decoding if fairness is on and an example lacks groups.

    Also when a ``{group: share}`` target names a group the example does not have.
    Errors name the example's file:line (``ex.where``).
    """
    from ..evaluation.errors import DataError

    if config.active:
        for i, ex in enumerate(examples):
            where = ex.where(f"examples[{i}]")
            groups = ex.require_groups(where)
            if isinstance(config.fairness, dict):
                unknown = sorted(set(config.fairness) - set(groups))
                if unknown:
                    raise DataError(
                        f"{where}: example {ex.id!r}: `fairness` names groups {unknown} that are not "
                        f"among its groups {groups}; use the example's group labels as keys"
                    )


def fairness_hooks(batch: Any, settings: FairnessSettings | None = None) -> BatchHooks:
    """The processors and ``generate`` kwargs for one ``PromptBatch`` (empty when fairness is off).

    ``settings``: the fairness part to apply (default: the batch's config).
    """
    from .fair_beam import FairBeamSettings, fair_beam_search
    from .group_coverage import GroupCoverageProcessor
    from .group_vocab import GroupTables, build_group_vocab

    config = settings if settings is not None else batch.config
    if not config.active or config.fairness is None:  # active implies a target; the check narrows it
        return BatchHooks()
    model = batch.model
    vocabs = [build_group_vocab(ex, batch.tokenizer) for ex in batch.examples]
    vocab_size = int(model.get_output_embeddings().weight.shape[0])
    tables = GroupTables.build(vocabs, vocab_size, config.fairness, device=batch.input_ids.device)
    hooks = BatchHooks()
    if config.fairness_strength > 0:
        start = 1 if model.config.is_encoder_decoder else batch.prompt_length
        hooks.processors.append(
            GroupCoverageProcessor(tables, config.fairness_strength, config.fairness_tau, start)
        )
    if config.fair_beam > 0 or config.fair_meaning > 0:
        meaning = None
        if config.fair_meaning > 0:
            from .embeddings import load_encoder
            from .meaning import MeaningCoverage

            device = str(batch.input_ids.device)
            meaning = MeaningCoverage.build(
                batch.examples, tables, load_encoder(config.fair_meaning_encoder, device=device),
                batch.tokenizer, config.fair_meaning, config.fair_meaning_every, config.fair_meaning_measure,
            )
        hooks.generate_kwargs.update(
            custom_generate=fair_beam_search,
            fair_beam=FairBeamSettings(tables, config.fair_beam, config.fairness_tau, meaning=meaning),
        )
    return hooks
