"""Regenerate the README's figures by running the README's own Python blocks in docs/.

    python docs/make_readme_figures.py
"""

import os
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

DOCS = Path(__file__).resolve().parent
README = (DOCS.parent / "README.md").read_text()

if __name__ == "__main__":
    os.chdir(DOCS)
    namespace: dict = {}
    for i, code in enumerate(c for lang, c in re.findall(r"```(\w*)\n(.*?)```", README, flags=re.S) if lang == "python"):
        exec(compile(code, f"README.md python block {i}", "exec"), namespace)
    print("wrote", ", ".join(sorted(p.name for p in DOCS.glob("*.png"))))
