"""How close the budgets' token estimate (what a call reserves for its prompt: `budget.text_tokens`)
comes to real tokenizers' counts, by kind of text (issue 55: "the prompt counted, not its bytes").

    .venv/bin/python benchmarks/bench_budget_estimates.py --setup     # makes the tokenizers' venv first
    .venv/bin/python benchmarks/bench_budget_estimates.py [--python /tmp/hermes-tokenizers/bin/python]

The tokenizers run in a venv of their own (nothing is installed into the project's): tiktoken, the
Hugging Face `tokenizers`, and litellm's wheel (installed without its dependencies and never
imported) for the vocabularies it bundles, so that nothing is downloaded when they load: OpenAI's
`cl100k_base` (GPT-4, GPT-3.5) and `o200k_base` (GPT-4o, o1, o3, GPT-4.1), the Claude tokenizer
Anthropic published (`anthropic_tokenizer.json`, Claude 1 and 2: Claude 3 and later use one that
is not public) and DeepSeek's (`deepseek_tokenizer.json`). tiktoken alone would download its
vocabulary from the internet; with TIKTOKEN_CACHE_DIR set to litellm's folder it reads them there.
`--setup` makes that venv (python3 -m venv, then pip install: a package registry is all it needs):

    python3 -m venv /tmp/hermes-tokenizers
    /tmp/hermes-tokenizers/bin/pip install tiktoken tokenizers
    /tmp/hermes-tokenizers/bin/pip install --no-deps litellm

Reported per kind (corpus: benchmarks/_token_corpus.py) and tokenizer: the estimate over the true
count summed over the kind's texts, the lowest ratio of one text, and how many texts the estimate
put under the truth. A reservation is an upper bound when every ratio is at least 1; caps are
usable when it is not much more.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _token_corpus import corpus  # noqa: E402

VENV = Path(os.environ.get("HERMES_TOKENIZERS_VENV", "/tmp/hermes-tokenizers"))

# Run by the tokenizers' venv: the texts (JSON on stdin) counted by each tokenizer (JSON on stdout).
COUNT = r"""
import importlib.util, json, os, sys
folder = os.path.join(importlib.util.find_spec("litellm").submodule_search_locations[0], "litellm_core_utils",
                      "tokenizers")
os.environ["TIKTOKEN_CACHE_DIR"] = folder  # litellm's bundled vocabularies: nothing is downloaded
import tiktoken
from tokenizers import Tokenizer
texts = json.load(sys.stdin)
out = {}
for name in ("cl100k_base", "o200k_base"):
    encoding = tiktoken.get_encoding(name)
    out[name] = [len(encoding.encode(text, disallowed_special=())) for text in texts]
for name, file in (("claude-2", "anthropic_tokenizer.json"), ("deepseek", "deepseek_tokenizer.json")):
    tokenizer = Tokenizer.from_file(os.path.join(folder, file))
    out[name] = [len(tokenizer.encode(text, add_special_tokens=False).ids) for text in texts]
json.dump(out, sys.stdout)
"""


def setup(venv: Path) -> Path:
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "tiktoken", "tokenizers"], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "litellm"], check=True)
    return python


def counts(python: Path, texts: list[str]) -> dict[str, list[int]]:
    done = subprocess.run([str(python), "-c", COUNT], input=json.dumps(texts), capture_output=True, text=True,
                          check=False)
    if done.returncode:
        raise SystemExit(f"the tokenizers' venv ({python}) could not count: {done.stderr.strip()[-1500:]}\n"
                         f"make it with --setup (or see this script's docstring)")
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--setup", action="store_true", help=f"make the tokenizers' venv ({VENV}) when missing")
    parser.add_argument("--python", type=Path, default=VENV / "bin" / "python", help="the tokenizers' venv's python")
    parser.add_argument("--texts", action="store_true", help="also print each text's counts")
    args = parser.parse_args()
    python = setup(VENV) if args.setup else args.python
    if not python.exists():
        raise SystemExit(f"no tokenizers' venv at {python}: run with --setup, or see this script's docstring")
    estimate = importlib.import_module("hermes_core._llm.budget").text_tokens
    kinds = corpus()
    texts = [text for group in kinds.values() for text in group]
    found = counts(python, texts)
    names = list(found)
    print(f"{len(texts)} texts, {sum(map(len, texts)):,} characters; estimate / true tokens, summed over a kind "
          "(lowest of one text; texts under the truth)")
    print("| kind | texts | characters | " + " | ".join(names) + " |")
    print("| --- | --- | --- | " + " | ".join("---" for _ in names) + " |")
    start = 0
    worst = {name: (float("inf"), "") for name in names}
    for kind, group in kinds.items():
        ours = [estimate(text) for text in group]
        cells = []
        for name in names:
            true = found[name][start:start + len(group)]
            ratios = [mine / real for mine, real in zip(ours, true) if real]
            under = sum(ratio < 1 for ratio in ratios)
            cells.append(f"{sum(ours) / sum(true):.2f} ({min(ratios):.2f}{'; ' + str(under) + ' under' if under else ''})")
            if min(ratios) < worst[name][0]:
                worst[name] = (min(ratios), kind)
            if args.texts:
                for text, mine, real in zip(group, ours, true):
                    print(f"    {name:<12} {mine:>6} / {real:>6} = {mine / real:5.2f}  {text[:60]!r}")
        print(f"| {kind} | {len(group)} | {sum(map(len, group)):,} | " + " | ".join(cells) + " |")
        start += len(group)
    everything = [estimate(text) for text in texts]
    print("| all | " + f"{len(texts)} | {sum(map(len, texts)):,} | "
          + " | ".join(f"{sum(everything) / sum(found[name]):.2f} ({worst[name][0]:.2f}, {worst[name][1]})"
                       for name in names) + " |")


if __name__ == "__main__":
    main()
