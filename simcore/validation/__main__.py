"""`python -m simcore.validation [--fast] [--out docs/validation.md] [--check]`.

Runs the validation dataset through the simulator, prints one line per case and the summary,
and with `--out` writes the report (atomically). `--check` regenerates the report and exits 1
if the file at `--out` differs (a CI guard that docs/validation.md is up to date).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

from simcore.atomic import atomic_path
from simcore.errors import UserError
from simcore.validation.dataset import DATASET, load_dataset
from simcore.validation.report import dataset_fingerprint, render
from simcore.validation.runner import run_cases


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m simcore.validation",
                                     description="Compare the simulator with public Trainium measurements.")
    parser.add_argument("--fast", action="store_true", help="only the fast subset (skips end-to-end cases)")
    parser.add_argument("--out", type=Path, help="write the markdown report here (e.g. docs/validation.md)")
    parser.add_argument("--check", action="store_true", help="exit 1 if --out is not what this run would write")
    parser.add_argument("--dataset", type=Path, default=DATASET, help="dataset file (default: the bundled one)")
    parser.add_argument("-q", "--quiet", action="store_true", help="no per-case lines")
    args = parser.parse_args(argv)
    try:
        if args.check and args.out is None:
            raise UserError("--check needs --out (the report to compare).")
        data = load_dataset(args.dataset)
        cases = [c for c in data.cases if c.fast or not args.fast]

        def show(case, result, seconds):
            if not args.quiet:
                print(f"{case.id:42s} measured {case.measured:>9g} {case.unit:2s}  simulated {result.simulated:>9.4g}"
                      f"  {result.error:+7.1%}  {'ok' if result.passed else 'MISS'}  ({seconds:.2f} s)", flush=True)

        results = run_cases(cases, show)
        text = render(results, data.excluded, fast_only=args.fast, fingerprint=dataset_fingerprint(args.dataset),
                      harnesses=data.harnesses)
        fit = [abs(r.error) for r in results if r.case.fit]
        if fit:
            print(f"calibration cases: {len(fit)}, median |error| {statistics.median(fit):.1%}, max {max(fit):.1%}")
        if args.check:
            current = args.out.read_text(encoding="utf-8") if args.out.is_file() else ""
            if current != text:
                print(f"{args.out} is out of date; regenerate it with: python -m simcore.validation "
                      f"{'--fast ' if args.fast else ''}--out {args.out}", file=sys.stderr)
                return 1
            return 0
        if args.out:
            with atomic_path(args.out) as tmp:
                Path(tmp).write_text(text, encoding="utf-8")
            print(f"wrote {args.out}")
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
