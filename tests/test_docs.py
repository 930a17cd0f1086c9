"""Docs that cannot go stale: every fenced code block of README.md and docs/*.md runs here, or is
marked for what it is, and every `vdla ...` command written in the prose names options that exist.

A block runs as written unless the line before it is a marker comment ``<!-- doc: KIND -->``:

======================  ==========================================================================
(no marker) sh, python  ``sh``: one bash script (``set -e``) as on a fresh clone after
                        ``scripts/setup.sh``: ``.venv/bin/vdla`` and ``.venv/bin/python`` work, bare
                        ``vdla``/``python``/``pytest``/``pip`` fail (not on PATH there);
                        ``python``: the project's interpreter; ``json``: must parse. Blocks of one
                        file share a working folder (with ``examples/`` and ``.venv`` of the
                        checkout), in order, so a block may use what an earlier one wrote.
``asm``                 assembly: the file's asm blocks together (directives first) must assemble
                        and run on the reference semantics
``synopsis``            command synopses (``[--option]``, ``A|B``, placeholders): every option
                        exists; ``pytest``/``benchmarks`` lines name existing files
``board`` / ``vivado``  needs the PYNQ-Z1 or Vivado: not run; its ``vdla`` lines must still parse
``covered-by PATH...``  too long for this test (the main job, the whole suite, setup): each command
                        (each part of an ``&&`` chain) is found in one of the PATHs (a test or
                        script that runs it): its ``vdla`` subcommand and options, or its files
``needs WHAT``          needs what is not in the test environment (torch, pynq): Python is only
                        compiled, ``vdla`` lines only parsed
``text``                not code (a file tree, a formula)
======================  ==========================================================================
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from vdla.cli import build_parser
from vdla_hw.config import load_config
from vdla_hw.presets import PRESETS

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"(?:^<!-- doc: (?P<marker>[^>]*?) -->\n)?^```(?P<lang>\w*)\n(?P<body>.*?)^```", re.S | re.M)
PREFIXES = ("sudo -E ", "board$ ", "host$ ", ".venv/bin/")
TIMEOUT = 600


def blocks(path: Path) -> list[tuple[int, str, str, str]]:
    """(line, marker, language, body) of every fenced block."""
    text = path.read_text()
    return [(text[:m.start("lang")].count("\n"), (m.group("marker") or "").strip(), m.group("lang"), m.group("body"))
            for m in BLOCK.finditer(text)]


def block_ids():
    for path in DOCS:
        for line, marker, lang, body in blocks(path):
            yield pytest.param(path, line, marker, lang, body, id=f"{path.relative_to(ROOT)}:{line}")


def commands(body: str) -> list[str]:
    """The command lines of a block: comments dropped, continuations joined, prefixes removed."""
    text = re.sub(r"\\\n\s*", " ", body)
    out = []
    for line in text.splitlines():
        line = re.sub(r"(^|\s)#.*$", "", line).strip()
        for prefix in PREFIXES:
            line = line.removeprefix(prefix).strip()  # "host$  vdla ..." was left " vdla ...", unchecked
        if line:
            out.append(line)
    return out


def parser_for(words: list[str]) -> tuple[argparse.ArgumentParser, list[str]]:
    """The subcommand parser a `vdla ...` line reaches, and the words after the subcommands."""
    parser = build_parser()
    rest = list(words)
    while rest:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs or rest[0] not in subs[0].choices:
            break
        parser = subs[0].choices[rest.pop(0)]
    return parser, rest


def check_options(line: str, where: str) -> None:
    """Every --option of a `vdla ...` synopsis exists on the subcommand it names."""
    words = [w for w in re.split(r"[\s\[\]|]+", line) if w]
    assert words and words[0] == "vdla", f"{where}: not a vdla command: {line}"
    parser, rest = parser_for(words[1:])
    assert parser.prog != "vdla", f"{where}: {line!r} names no vdla subcommand"
    known = {s for a in parser._actions for s in a.option_strings}
    for word in rest:
        if word.startswith("-") and not re.fullmatch(r"-?\d+(\.\d+)?", word):
            option = word.split("=", 1)[0]
            assert option in known, f"{where}: `{parser.prog}` has no option {option} (it has {sorted(known)})"


def check_parses(line: str, where: str) -> None:
    """A `vdla ...` line of a board/Vivado block: argparse accepts it (names, values, ranges)."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    words = []
    for word in lexer:
        if word in (">", ">>", "|", "&&", ";", "<"):
            break  # the shell's part of the line
        words.append(word)
    try:
        build_parser().parse_args(words[1:])
    except SystemExit as err:
        raise AssertionError(f"{where}: `{line}` does not parse ({err})") from None


@pytest.fixture(scope="module")
def workdirs(tmp_path_factory):
    """One working folder per documentation file, shared by its blocks in order."""
    made = {}

    def get(path: Path) -> Path:
        if path not in made:
            made[path] = tmp_path_factory.mktemp(path.stem)
            (made[path] / "examples").symlink_to(ROOT / "examples")
            (made[path] / ".venv").symlink_to(sys.prefix)  # the clone's .venv, as the blocks name it
            stubs = made[path] / NOT_ON_PATH
            stubs.mkdir()
            for name in FRESH_MISSING:
                (stubs / name).write_text(f"#!/bin/sh\necho '{name}: not on PATH on a fresh clone after "
                                          f"scripts/setup.sh: write .venv/bin/{name}' >&2\nexit 127\n")
                (stubs / name).chmod(0o755)
        return made[path]

    return get


# What a fresh clone has not on PATH after scripts/setup.sh (all in .venv/bin/): a block that
# runs them bare fails, as it would for a reader (the README used bare vdla and python)
FRESH_MISSING = ("vdla", "python", "pytest", "pip")
NOT_ON_PATH = ".not-on-a-fresh-path"


def environment(cwd: Path) -> dict:
    """The blocks' environment: the reader's PATH without this venv, with commands that fail in
    place of :data:`FRESH_MISSING` (a pyenv or another venv may provide them here)."""
    env = dict(os.environ)
    venv_bin = str(Path(sys.prefix) / "bin")
    kept = [d for d in env.get("PATH", "").split(os.pathsep) if d and os.path.realpath(d) != os.path.realpath(venv_bin)]
    env["PATH"] = os.pathsep.join([str(cwd / NOT_ON_PATH), *kept])
    env.pop("VIRTUAL_ENV", None)
    env["XDG_CONFIG_HOME"] = str(cwd / "config")   # key files of `vdla serve` stay in the test folder
    return env


@pytest.mark.parametrize("path, line, marker, lang, body", list(block_ids()))
def test_code_block(path, line, marker, lang, body, workdirs):
    where = f"{path.relative_to(ROOT)}:{line}"
    kind, _, arg = marker.partition(" ")
    cwd = workdirs(path)
    if kind == "text":
        return
    if kind in ("board", "vivado"):
        for command in commands(body):
            if command.startswith("vdla "):
                check_parses(command, where)
        return
    if kind == "synopsis":
        for command in commands(body):
            if command.startswith("vdla "):
                check_options(command, where)
            else:
                words = command.split()
                named = [w for w in words if "/" in w or w.endswith(".py")]
                modules = [words[k + 1] for k, w in enumerate(words[:-1]) if w == "-m"]
                assert (named or modules) and all((ROOT / w).exists() for w in named), f"{where}: {command}"
                assert all(importlib.util.find_spec(m) for m in modules), f"{where}: no module in {command}"
        return
    if kind == "covered-by":
        targets = [ROOT / name for name in arg.split()]
        assert targets and all(t.is_file() for t in targets), f"{where}: covered-by {arg}: no such file"
        text = "\n".join(t.read_text() for t in targets)
        for command in commands(body):
            for part in command.split("&&"):
                words = part.split()
                for prefix in PREFIXES:
                    words[0] = words[0].removeprefix(prefix.strip())
                if words[0] == "vdla":
                    wanted = words[1:2] + [w for w in words[2:] if w.startswith("-") or (ROOT / w).is_file()]
                else:
                    wanted = [w for w in words if "/" in w or w.endswith((".sh", ".py"))] or \
                        [w for w in words if not w.startswith("-")]
                missing = [w for w in wanted if w not in text]
                assert not missing, f"{where}: {arg} do not run `{part.strip()}` (no mention of {missing})"
        return
    if kind == "needs":
        if lang == "python":
            compile(body, where, "exec")
        for command in commands(body) if lang == "sh" else []:
            command = re.sub(r"^(\w+=\S+ )+", "", command).removeprefix(".venv-board/bin/")
            if command.startswith("vdla "):
                check_parses(command, where)
        return
    if kind == "asm":
        return  # assembled together with the file's other asm blocks (test_assembly_blocks)
    assert not kind, f"{where}: unknown marker {marker!r}"
    if lang == "json":
        json.loads(body)
        return
    if lang == "sh":
        script = "set -euo pipefail\n" + body
        done = subprocess.run(["bash", "-c", script], cwd=cwd, env=environment(cwd), capture_output=True,
                              text=True, timeout=TIMEOUT)
    elif lang == "python":
        done = subprocess.run([sys.executable, "-c", body], cwd=cwd, env=environment(cwd), capture_output=True,
                              text=True, timeout=TIMEOUT)
    else:
        raise AssertionError(f"{where}: a ``` block without a language (sh, python) or a marker "
                             "(<!-- doc: text|asm|synopsis|board|vivado|covered-by PATH -->)")
    assert done.returncode == 0, f"{where} failed:\n{body}\n--- stdout\n{done.stdout[-2000:]}\n--- stderr\n" \
                                 f"{done.stderr[-3000:]}"


@pytest.mark.parametrize("path", [p for p in DOCS if any(m == "asm" for _, m, _, _ in blocks(p))],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_assembly_blocks(path, tmp_path):
    from vdla_hw.asm import assemble
    from vdla_hw.semantics import execute

    lines = [ln for _, marker, _, body in blocks(path) if marker == "asm" for ln in body.splitlines()]
    directives = [ln for ln in lines if ln.lstrip().startswith(".")]
    program = "\n".join(directives + [ln for ln in lines if ln not in directives]) + "\n"
    bundle = assemble(program, source=f"{path.name} (asm blocks)")
    result = execute(bundle)
    # what the program stores computes something (the README's once loaded no weights and reset
    # its accumulator: a newcomer's first run printed all zeros)
    outs = [name for name, sym in bundle.symbols.items() if sym.mem == "out"]
    assert outs and all(bundle.read(name, result.dram).any() for name in outs), (path.name, outs)


INLINE = re.compile(r"`(vdla [^`]+)`")


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_commands_in_the_prose_name_existing_options(path):
    text = re.sub(r"^```.*?^```", "", path.read_text(), flags=re.S | re.M)
    for match in INLINE.finditer(text):
        where = f"{path.relative_to(ROOT)}:{text[:match.start()].count(chr(10)) + 1}"
        check_options(match.group(1).replace("...", " "), where)


FINGERPRINT = re.compile(r"\b\d+x\d+_i\d+w\d+a\d+(?:_\d+){4}-[0-9a-f]{8}\b")


def test_fingerprints_in_the_docs_are_current():
    current = {load_config(name).fingerprint for name in PRESETS}
    for path in DOCS:
        for found in FINGERPRINT.findall(path.read_text()):
            assert found in current, f"{path.relative_to(ROOT)}: fingerprint {found} is stale ({sorted(current)})"


# a command word where a shell starts a command: a line's start (after VAR=value words, sudo -E or
# a host$ prompt), or after &&, ;, a pipe or $(
COMMAND_WORD = re.compile(r"(?:^|&&|;|\|\s|\$\()\s*(?:\w+=\S+\s+)*(?:sudo -E\s+|host\$\s+)?(?P<word>[\w./-]+)", re.M)


def bare_commands(body: str, marker: str) -> list[str]:
    """The commands of a block that a fresh clone does not have on PATH (:data:`FRESH_MISSING`,
    written bare instead of .venv/bin/...). A board block's lines run on the board (the project
    installed there with pip), except its ``host$`` lines; text and assembly are not commands."""
    kind = marker.partition(" ")[0]
    if kind in ("text", "asm"):
        return []
    lines = body.splitlines()
    if kind == "board":
        lines = [line for line in lines if line.startswith("host$")]
    found = []
    for line in lines:
        code = re.sub(r"(^|\s)#.*$", "", line)
        found += [line.strip() for m in COMMAND_WORD.finditer(code) if m.group("word") in FRESH_MISSING]
    return found


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_commands_are_written_as_they_run_on_a_fresh_clone(path):
    """Every command of every block (run or not: synopses, covered-by, needs) says .venv/bin/vdla,
    .venv/bin/python: after the README's set-up a fresh clone has neither on PATH."""
    bare = [f"{path.relative_to(ROOT)}:{line}: {command}" for line, marker, _, body in blocks(path)
            for command in bare_commands(body, marker)]
    assert not bare, "written bare (write .venv/bin/...):\n" + "\n".join(bare)


def test_bare_commands_are_found():
    assert bare_commands("vdla run x\n.venv/bin/vdla run y\n", "") == ["vdla run x"]
    assert bare_commands("FOO=1 python -m x | vdla asm - && pytest -q  # python\n", "synopsis") == \
        ["FOO=1 python -m x | vdla asm - && pytest -q  # python"] * 3
    assert bare_commands("sudo -E vdla serve\nhost$  vdla deploy r\n", "board") == ["host$  vdla deploy r"]
    assert bare_commands(".meta {\"producer\": \"vdla asm\"}\n", "text") == []
    assert bare_commands("cat notes.txt  # then vdla run\n.venv/bin/python -m pytest\n", "") == []


def test_a_bare_command_fails_when_run_as_a_block(workdirs):
    """The blocks' environment is a fresh clone's: bare vdla and python fail, .venv/bin/ works."""
    cwd = workdirs(ROOT / "README.md")
    for script, ok in (("vdla --help", False), ("python -c 'import numpy'", False), ("pytest --version", False),
                       (".venv/bin/vdla --help", True), (".venv/bin/python -c 'import numpy, vdla'", True)):
        done = subprocess.run(["bash", "-c", script], cwd=cwd, env=environment(cwd), capture_output=True, text=True,
                              timeout=120)
        assert (done.returncode == 0) == ok, (script, done.stderr)
