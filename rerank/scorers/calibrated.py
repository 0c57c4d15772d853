"""``calibrated:CAL``: registered scorers combined by a calibration fitted to human scores.

``CAL`` is a calibration JSON written by ``evenhand calibrate`` or the name of
one shipped with evenhand (``faithfulness``, ``coverage``: fitted on the dev
half of the controlled summaries of Ri, Deas & McKeown 2025; see
``docs/reranking.md``). The score is the calibration's prediction of the
human target (``evenhand.evaluation.scoring.calibration``) from the raw scores of its
component scorers, which are built through the registry with the options the
calibration stores (``scorer_options``), overridden by ``options``. The
components cache their own scores; the prediction is cheap and not cached.

The prediction is a linear estimate on the scale of the human target (a share
of key points for the shipped fits). It is calibrated in the fit's domain
(perspective articles of ~800 words); far outside it, e.g. on 100-word review
sets, raw features such as ROUGE-1 recall lie many standard deviations from the
fit's mean and the estimate leaves [0, 1] (the demo sets' references score
about 4 on ``calibrated:coverage``). Its order is still meaningful, which is
what reranking uses; refit with ``evenhand calibrate`` on human scores from
your domain for values you can read as the target.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from ...evaluation.errors import DataError
from ...evaluation.scoring.calibration import Calibration
from ...evaluation.scoring.registry import register
from ...evaluation.scoring.scorer import Scorer, ScorerConfig, Source, as_example

#: The calibrations shipped inside the package (``calibrated:NAME``).
SHIPPED = ("faithfulness", "coverage")


def calibration_path(spec: str) -> Path:
    """The file of ``spec``: a shipped name (``faithfulness``, ``coverage``) or a path."""
    if spec in SHIPPED:
        return Path(str(resources.files("evenhand.rerank") / "calibrations" / f"{spec}.json"))
    path = Path(spec).expanduser()
    if not path.is_file():
        raise DataError(
            f"calibrated:{spec}: no such calibration file; give a JSON written by `evenhand calibrate` "
            f"or one of the shipped names: {', '.join(SHIPPED)}"
        )
    return path


def load_calibration(spec: str) -> Calibration:
    """Read and validate the calibration named by ``spec`` (see ``calibration_path``)."""
    path = calibration_path(spec)
    from ...evaluation.io.parsing import parse_json
    from ...evaluation.io.utf8 import read_utf8

    data = parse_json(read_utf8(path, f"calibrated:{spec}"), f"calibrated:{spec}: {path}")
    return Calibration.from_dict(data, where=f"calibrated:{spec}")


def stale_features(calibration: Calibration, components: dict[str, Scorer]) -> list[str]:
    """Features whose scorer code changed since the fit: ``name (version fitted -> now)``; a calibration
    without ``meta.score_versions`` (written before versions existed) was fitted at version 0."""
    recorded = calibration.meta.get("score_versions") if isinstance(calibration.meta, dict) else None
    recorded = recorded if isinstance(recorded, dict) else {}
    out = []
    for name, scorer in components.items():
        fitted = recorded.get(name, 0)
        if fitted != scorer.score_version:
            out.append(f"{name} ({fitted} -> {scorer.score_version})")
    return out


@dataclass
class CalibratedConfig(ScorerConfig):
    """Settings of the ``calibrated`` scorer."""

    path: str = field(
        default="", metadata={"help": "Calibration JSON from `evenhand calibrate`, or faithfulness/coverage."}
    )
    options: dict[str, dict[str, Any]] = field(
        default_factory=dict,
        metadata={"help": "Per-component config fields overriding the calibration's scorer_options."},
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.path, str) or not self.path.strip():
            raise ValueError(
                "`path` is empty; write calibrated:FILE.json or calibrated:faithfulness / calibrated:coverage"
            )


@register("calibrated")
class CalibratedScorer(Scorer[CalibratedConfig]):
    """The calibrated prediction of a human score from registered scorers."""

    Config = CalibratedConfig
    argument = "path"
    argument_help = f"a calibration JSON from `evenhand calibrate`, or {' / '.join(SHIPPED)}"
    detail_fields = ("components", "calibration")

    def __init__(self, config: CalibratedConfig | None = None, cache_dir: Any = None) -> None:
        super().__init__(config, cache_dir=None)  # the components cache; the prediction is cheap
        from ...evaluation.scoring.registry import get_scorer

        self.name = f"calibrated:{self.config.path}"
        self.calibration = load_calibration(self.config.path)
        unknown = set(self.config.options) - set(self.calibration.scorers)
        if unknown:
            raise ValueError(
                f"`options` names scorers {sorted(unknown)} that are not in the calibration "
                f"({', '.join(self.calibration.scorers)})"
            )
        self.components: dict[str, Scorer] = {
            name: get_scorer(
                name, cache_dir=cache_dir,
                **{"batch_size": self.config.batch_size, "progress": self.config.progress,
                   **self.calibration.scorer_options.get(name, {}), **self.config.options.get(name, {})},
            )
            for name in self.calibration.scorers
        }
        stale = stale_features(self.calibration, self.components)
        if stale:
            import warnings

            warnings.warn(
                f"calibrated:{self.config.path}: fitted on scores of {', '.join(stale)} from older scorer "
                "code than this evenhand's (meta.score_versions), so its weights and normalization may not "
                "fit today's scores; refit it with `evenhand calibrate`", stacklevel=2)

    @property
    def model_id(self) -> str:
        return ",".join(f"{n}={s.model_id}" for n, s in self.components.items() if s.model_id)

    def score_details(self, sources: Sequence[Source], outputs: Sequence[str]) -> list[dict[str, Any]]:
        examples = [as_example(s, i) for i, s in enumerate(sources)]  # components apply target_only
        _, outputs = self._validate(sources, outputs)
        raw = {name: s.score(examples, outputs) for name, s in self.components.items()}
        predictions = self.calibration.predict(raw)
        return [
            {"score": float(p), "components": {n: raw[n][i] for n in raw}, "calibration": self.config.path}
            for i, p in enumerate(predictions)
        ]

    def _score_batch(self, sources: list[Any], outputs: list[str]) -> list[dict[str, Any]]:
        return self.score_details(sources, outputs)
