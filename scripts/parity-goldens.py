"""Store stock nbgrader's result of each parity case (tests/golden/parity/<case>.json), which `make test`
compares jaxpath with (`make test-all` also runs nbgrader live and checks the stored result still holds).

    .venv/bin/python scripts/parity-goldens.py [CASE ...]    # every case when none is named
"""
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import test_parity  # noqa: E402  (the cases and their set-up live with the test)


def main(names: list[str]) -> None:
    unknown = sorted(set(names) - set(test_parity.CASES))
    if unknown:
        sys.exit(f"no parity case named {', '.join(unknown)} (cases: {', '.join(sorted(test_parity.CASES))})")
    for name in names or sorted(test_parity.CASES):
        with tempfile.TemporaryDirectory(prefix="jaxpath-parity-") as tmp:
            root = test_parity.set_up(test_parity.CASES[name], Path(tmp) / "course")
            path = test_parity.write_golden(name, test_parity.nbgrader_result(test_parity.CASES[name], root))
        print(f"{name}: {path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path}")


if __name__ == "__main__":
    main(sys.argv[1:])
