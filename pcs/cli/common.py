"""Shared CLI pieces: the command class, output-format and quiet options, choices, progress, one emit
path, error grades, signals.

Every command parses options, calls the API, renders with :mod:`pcs.report`
and calls :func:`emit`; nothing else prints results. Every command is a
:class:`PcsCommand` (made with :func:`command`): an option that takes one
value given twice is an error, and a command that runs compiled twins says
once when they are not built.
"""
from __future__ import annotations

import contextlib
import functools
import importlib
import io
import json
import math
import os
import re
import signal
import sys
import threading
from typing import Any, Callable, Iterable, Iterator, Sequence

import click

from pcs.cli.progress import Progress, counted  # noqa: F401 - the names commands import from here
from pcs.cli.main import release_gc
from pcs.cli.params import Choice
from pcs.errors import (BUG_REPORT, STOP_CHECKS, STOPS, InputError, PathError, PickledAsIs, Stopped, UnknownNameError,
                        UserError, as_typed, printable, quoted, repr_bytes, shown_path, shown_repr, utf8_text)

__all__ = ["PcsUsageError", "PcsCommand", "PcsGroup", "command", "RegistryChoice", "RegistryRefusal", "format_option", "quiet_option",
           "Progress", "counted", "emit", "user_errors", "to_jsonable", "Terminated", "unwind_on_signals", "ignore_stop_signals"]


class PcsUsageError(PickledAsIs, click.ClickException):
    """A user error: printed as one line ``pcs: error: ...``, exit code 2; a character that is not printable (a
    right-to-left mark, a control character) in it shown as its escape (:func:`pcs.errors.printable`), the last
    guard of the rule every message keeps (a file name through :func:`pcs.errors.shown_path`, a value through
    :func:`pcs.errors.quoted`): none reaches the terminal raw."""

    exit_code = 2

    def show(self, file=None) -> None:  # noqa: D401 - click API
        click.echo(f"pcs: error: {printable(self.format_message())}", err=True)


class PcsInternalError(PickledAsIs, click.ClickException):
    """A bug in pcs: the traceback, then one line saying it is a bug and where to report it; exit code 1."""

    exit_code = 1

    def __init__(self, exc: BaseException) -> None:
        import traceback   # a bug's path only

        super().__init__(f"{type(exc).__name__}: {exc}")
        self.trace = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))

    def show(self, file=None) -> None:  # noqa: D401 - click API
        click.echo(self.trace, err=True, nl=False)
        click.echo(f"pcs: internal error: {BUG_REPORT}", err=True)


class PcsStopped(PickledAsIs, click.ClickException):
    """Ctrl-C (exit 130) or SIGTERM / SIGHUP (exit 128 + the signal): one line, temporary files removed."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code

    def show(self, file=None) -> None:  # noqa: D401 - click API
        click.echo(f"pcs: {self.format_message()}", err=True)


class Terminated(Stopped):
    """SIGTERM or SIGHUP arrived: raised in the main thread so every ``finally`` runs (temp files removed).

    A ``BaseException`` like ``KeyboardInterrupt`` (:class:`pcs.errors.Stopped`), so ``except Exception`` does
    not swallow it, nor a plug-in policy's guard blame the policy for it.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


#: Signals that stop a run the way Ctrl-C does (SIGINT already raises KeyboardInterrupt).
STOP_SIGNALS = tuple(getattr(signal, n) for n in ("SIGTERM", "SIGHUP") if hasattr(signal, n))


def _stop_raised(signum: int) -> BaseException:
    """The exception a stop signal raises: ``KeyboardInterrupt`` for SIGINT (Ctrl-C), else :class:`Terminated`."""
    return KeyboardInterrupt() if signum == signal.SIGINT else Terminated(signum)


def _the_command() -> bool:
    """Whether this is the ``pcs`` command's own process (:func:`pcs.cli.main.main` ran) and its main thread: not
    a library caller, nor a test runner invoking a command in its own process."""
    main = sys.modules.get("pcs.cli.main")
    return bool(getattr(main, "COMMAND", False)) and threading.current_thread() is threading.main_thread()


def _the_process() -> bool:
    """Whether this process is the ``pcs`` command itself (:data:`pcs.cli.main.PROCESS`: the console script, ``python
    -m pcs``), which exits once its command is over -- not a program that called :func:`pcs.cli.main.main`."""
    main = sys.modules.get("pcs.cli.main")
    return bool(getattr(main, "PROCESS", False))


def ignore_stop_signals() -> None:
    """The ``pcs`` command is stopping (a stop signal's exception reached :func:`user_errors`) or is over (the end
    of :func:`unwind_on_signals`' block): ignore Ctrl-C and the stop signals from now until the process exits, so
    however many more come while it removes its temporary files, prints its one line and exits -- also late in the interpreter's finalisation, where Python resets its
    handlers to the signal's default action (one then killed the process by SIGINT: exit -2) -- it ends as the
    first one said (``pcs: interrupted``, exit 130). A no-op outside the command's process (:func:`_the_command`):
    a library caller or test runner keeps its handlers."""
    if _the_command():
        for s in (signal.SIGINT, *STOP_SIGNALS):
            signal.signal(s, signal.SIG_IGN)


@contextlib.contextmanager
def unwind_on_signals() -> Iterator[None]:
    """While inside: Ctrl-C raises ``KeyboardInterrupt`` and SIGTERM / SIGHUP :class:`Terminated`, the first
    stop signal only (main thread only); the old handlers after -- in the ``pcs`` command's process, none: every
    stop signal stays ignored until it exits (:func:`ignore_stop_signals`), after a stop and, in the ``pcs``
    process itself (:func:`_the_process`), after a command that ended without one too (its outputs are whole and
    its result printed: under Python's own handlers a signal as it exited ended it by the signal, exit -15, or in
    click's ``Aborted!``, exit 1); a program that called :func:`pcs.cli.main.main` and goes on has its handlers
    back.

    A second signal while the first one's exception unwinds the command is the same stop, said once: it raises
    nothing (it cut the cleanups the first one runs: a worker's join, a temporary file's removal, or printed an
    "Exception ignored" traceback from a finaliser, and under the old handlers ended the process by the signal).

    Python runs a signal handler between any two bytecodes, also inside a finaliser, a weak reference's callback
    (the import system's module locks have one) or a generator the garbage collector closes, where an exception
    is passed to ``sys.unraisablehook`` and dropped (Python docs, "object.__del__"). So while inside, a dropped
    :class:`Terminated` is not printed (no "Exception ignored" traceback) and is raised again 1 ms later from a
    one-shot ``ITIMER_REAL`` timer (SIGALRM), again and again until it lands where it propagates: the command stops
    near where the signal arrived, with no output completed after it. Each signal is also recorded, and a block
    that ends with no :class:`Terminated` raises it at its end, one that ends with another exception raises it in
    that one's place (:func:`_stop_replaced`: Python or a library turned the stop into another exception): a signal
    received while inside always ends the command with 128 + the signal. The timer, the SIGALRM handler and ``sys.unraisablehook`` are restored on exit.

    Raises:
        Terminated: a stop signal arrived while inside (raised where it arrived, else soon after, else at the end).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    arrived: list[int] = []

    def stop(signum, frame):
        arrived.append(signum)
        if len(arrived) == 1:
            raise _stop_raised(signum)

    old = {s: signal.signal(s, stop) for s in (signal.SIGINT, *STOP_SIGNALS)}
    restore = _redeliver_dropped(arrived)

    def stopped() -> BaseException | None:     # pcs.errors.raise_if_stopped: no output published after a stop
        return _stop_raised(arrived[0]) if arrived else None

    try:
        STOP_CHECKS.append(stopped)
        yield
        if arrived:        # raised where it arrived but dropped there (see above): the run still stops
            raise _stop_raised(arrived[0])
    except STOPS:
        raise
    except BaseException as exc:
        _stop_replaced(arrived, exc)
        raise
    finally:
        with contextlib.suppress(ValueError):
            STOP_CHECKS.remove(stopped)
        restore()
        _handlers_after(arrived, old)


def _handlers_after(arrived: list[int], old: dict) -> None:
    """The stop signals' handlers once :func:`unwind_on_signals`' block is over: ignored in the command's process
    after a stop (``arrived``), and in the ``pcs`` process itself always (it is about to exit:
    :func:`ignore_stop_signals`); else ``old`` (signal -> handler) put back."""
    if _the_command() and (arrived or _the_process()):
        ignore_stop_signals()
    else:
        for s, h in old.items():
            signal.signal(s, h)


def _stop_replaced(arrived: list[int], exc: BaseException) -> None:
    """Raise the stop of the first stop signal in ``arrived`` (:func:`_stop_raised`) in place of ``exc``, the
    exception leaving :func:`unwind_on_signals`' block, when one arrived; return when none did (``exc`` is raised).

    A stop's exception can reach the block's end as another: Python 3.11 turns an exception raised in a
    descriptor's ``__set_name__`` -- each dataclass field's, called as a class is made while a module is imported
    (``pcs replay`` imports its engine after the handlers are in place) -- into ``RuntimeError: Error calling
    __set_name__ on 'Field' instance ...``, the ``KeyboardInterrupt`` its cause; a library's ``except`` or a
    ``finally`` may replace it the same way. The signal came, so the command stops as the signal says: exit 130
    (128 + the signal) and one line, not a bug's traceback and exit 1 (:func:`user_errors`). ``exc`` is kept as the
    stop's ``__cause__``.

    Raises:
        KeyboardInterrupt, Terminated: a stop signal arrived while inside."""
    if arrived:
        raise _stop_raised(arrived[0]) from exc


def _redeliver_dropped(arrived: list[int]) -> Callable[[], None]:
    """Install :func:`unwind_on_signals`'s quiet hook for a dropped :class:`Terminated` (or the
    ``KeyboardInterrupt`` of a Ctrl-C it received) and its SIGALRM re-raise;
    return the function that restores the previous hook, handler and timer (platforms without ``setitimer``: the
    hook alone, the block's end raising)."""
    previous_hook = sys.unraisablehook
    timer = hasattr(signal, "setitimer") and hasattr(signal, "SIGALRM")

    def again(signum, frame):
        if arrived:        # a SIGALRM from elsewhere, with no stop signal received, changes nothing
            raise _stop_raised(arrived[0])

    def hook(unraisable):
        if not (isinstance(unraisable.exc_value, Terminated) or
                (arrived and isinstance(unraisable.exc_value, KeyboardInterrupt))):
            return previous_hook(unraisable)
        if timer:
            signal.setitimer(signal.ITIMER_REAL, 0.001)   # raised again where it can propagate
        return None

    old_alarm = signal.signal(signal.SIGALRM, again) if timer else None
    sys.unraisablehook = hook

    def restore() -> None:
        if timer:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old_alarm)
        if sys.unraisablehook is hook:
            sys.unraisablehook = previous_hook
    return restore


#: API keyword names (pcs.replay's, pcs.engine.schedconfig.SchedulerConfig's) -> the option a command-line user typed
_OPTION_OF = {"max_num_batched_tokens": "--max-num-batched-tokens", "max_num_seqs": "--max-num-seqs",
              "restore_timeout_per_token_s": "--restore-timeout-per-token", "restore_timeout_s": "--restore-timeout",
              "max_preemptions": "--max-preemptions", "ttft_slo_s": "--ttft-slo",
              "residency_step_s": "--residency-step", "protected_share": "--protected-share",
              "tier_policies": "--tier-policy", "gpu_memory_utilization": "--gpu-memory-utilization",
              "hybrid_kv_cache_manager": "--hybrid-kv-cache-manager", "swa_full_tokens_ratio": "--swa-full-tokens-ratio",
              "mamba_full_memory_ratio": "--mamba-full-memory-ratio", "mamba_cache_mode": "--mamba-cache-mode",
              "gap_oracle": "--gap-oracle", "kv_reserve": "--kv-reserve", "hardware_table": "--hardware-file"}
#: API keywords too common as words (or a sweep plan's keys, which a plan's own errors name) to be matched bare: named ``NAME=`` in API messages, alone (``admit=``),
#: with a value (``timing='sequential'``) or a list of them (``tiers=['gpu=400GB', 'cpu=2TB']``)
_KWARG_OF = {"tiers": "--tier", "tier_sets": "--tiers", "kv_reserve": "--kv-reserve", "policies": "--policy",
             "admits": "--admit", "admit": "--admit", "timing": "--timing", "model": "--model", "dtype": "--dtype",
             "tp": "--tp", "hardware": "--gpu", "router": "--router", "routers": "--router", "policy": "--policy",
             "instances": "--instances", "utilisation": "--mfu", "curve_capacities": "--curve-capacities",
             "compute_mode": "--compute", "shared_tier": "--shared-tier",
             "router_stale_s": "--router-stale-s",
             "format": "--trace-format", "on_error": "--on-error", "sort": "--sort", "block_size": "--block-size"}
#: The API's keyword arguments a sweep plan writes as a table of NAME = VALUE (``tier = {gpu = "400GB"}``)
_TABLE_KWARGS = frozenset({"tiers"})
#: The API's keyword arguments whose option is a flag (``--sort``): a plan writes them ``sort = true``.
_FLAG_KWARGS = frozenset({"sort"})
#: a str as Python's repr shows it (:func:`pcs.errors.quoted` with ``show=repr``): ``'lfu'``, ``'x\\n'`` (escaped),
#: ``"it's"``; its text is :func:`_repr_text`
_REPR = r"'(?:[^'\\]|\\.)*'|" + r'"(?:[^"\\]|\\.)*"'
_KWARG_PATTERN = (r"(?<![\w:,'=.\[-])(" + "|".join(sorted(_KWARG_OF, key=len, reverse=True)) +
                  r")(?:\[\d+\])?=(?:\[((?:" + _REPR + r")(?:, (?:" + _REPR + r"))*)\]|(" + _REPR + r")|(-?[0-9]+(?:\.[0-9]+)?(?:e[+-]?[0-9]+)?)(?![\w.])|(?=[\s,;:)]|$))")
#: A name inside a spec (``slru:protected_share=0.2``) or a quoted value is left as it is.
_FIELD_PATTERN = r"(?<![\w:,'=-])(" + "|".join(sorted(_OPTION_OF, key=len, reverse=True)) + r")\b(?!=)"
#: The API's roads to a re-blocked replay (pcs.trace.api.reblock_road: REBLOCK_ROAD, REBLOCKS, REBLOCKS_BY) -> the
#: command line's (convert a JSONL file to Parquet, which records its block size; pcs replay re-blocks that: the one
#: command that does, so compare, curve and trace name it too)
_REBLOCK_PHRASES = {
    "to replay it re-blocked to ": "to replay it re-blocked to ", "; elsewhere give ": "; elsewhere give ",
    "-token blocks, open it with pcs.open_trace(path, ": "-token blocks, convert it to Parquet at ",
    ") at the size it was recorded at and re-block that with pcs.trace.reblock.reblock(trace, ":
        " (trace convert: Parquet keeps the block size, which JSONL does not), then pcs replay that with ",
    "), which returns the streams to give pcs.replay (keyed exact at a multiple, lower and upper at a divisor: an "
    "interval's bounds)": "",
    "pcs.trace.reblock.reblock(trace, block_size) re-blocks a block-hash trace opened at its own size, for pcs.replay":
        "pcs replay re-blocks a block-hash trace",
    " (pcs.trace.reblock.reblock, for pcs.replay); ": " (pcs replay); "}
#: ... and a sweep plan's: a sweep point replays a trace at its recorded block size and re-blocks none
#: (pcs.sweep.kinds._no_reblock), so the plan is told it cannot reach the size asked, that pcs replay re-blocks
#: (pcs.trace.reblock.reblock in the API), outside the sweep, and how the plan runs at the recorded size
_PLAN_REBLOCK_PHRASES = {
    "to replay it re-blocked to ": "a sweep replays a trace at its recorded block size and cannot run this trace at ",
    "-token blocks, open it with pcs.open_trace(path, ":
        "-token blocks; outside the sweep, convert it to Parquet at ",
    ") at the size it was recorded at and re-block that with pcs.trace.reblock.reblock(trace, ":
        " (pcs trace convert: Parquet keeps the block size, which JSONL does not), then pcs replay re-blocks that to ",
    "), which returns the streams to give pcs.replay (keyed exact at a multiple, lower and upper at a divisor: an "
    "interval's bounds)": " (pcs.trace.reblock.reblock in the API)",
    "pcs.trace.reblock.reblock(trace, block_size) re-blocks a block-hash trace opened at its own size, for pcs.replay":
        "a sweep replays a trace at its recorded block size and cannot run it at another; outside the sweep, "
        "pcs replay TRACE --block-size N re-blocks a block-hash trace, as pcs.trace.reblock.reblock does in the API",
    " (pcs.trace.reblock.reblock, for pcs.replay); ": " (pcs replay, outside the sweep); the plan can ",
    "; elsewhere give ": "; to sweep it at its recorded size, write ",
}
#: API phrasings of a keyword's value (pcs/engine/select.py, runner.py, api.py) -> the command line's
_PHRASE_OF = {"engine='auto'": "--engine auto", "native 'auto'": "--native auto", "native 'c'": "--native c",
              "links names tier": "--link names tier", "compute_mode='infinite'": "--compute infinite",
              "links= names it": "--link NAME=VALUE names it",
              "links= is for": "--link is for", "use the compute dtype bf16": "use --compute-dtype bf16",
              "or load a Hugging Face config.json: model=pcs.model.hfconfig.load_hf_config(path)":
                  "or give a Hugging Face config.json path: --model path/to/config.json", **_REBLOCK_PHRASES}
#: the same phrasings in a sweep plan's words (docs/sweep.md "Options": the option without its dashes, the value
#: as TOML writes it)
_PLAN_PHRASE_OF = {"engine='auto'": 'engine = "auto"', "native 'auto'": 'native = "auto"', "native 'c'": 'native = "c"',
                   "links names tier": "link names tier", "compute_mode='infinite'": 'compute = "infinite"',
                   "links= names it": 'link = {NAME = "VALUE"} names it',
                   "links= is for": "link is for", "use the compute dtype bf16": 'use compute-dtype = "bf16"',
                   "or load a Hugging Face config.json: model=pcs.model.hfconfig.load_hf_config(path)":
                       'or give a Hugging Face config.json path: model = "path/to/config.json"', **_PLAN_REBLOCK_PHRASES}
#: the API's ``links['cpu'] = 'VALUE'`` and ``tier_policies['cpu'] = 'VALUE'`` (pcs/engine/api.py) -> ``--link cpu=VALUE``,
#: ``--tier-policy cpu=VALUE`` (a sweep plan: ``link cpu=VALUE``, ``tier-policy cpu=VALUE``); the value may be cut
#: by :func:`pcs.errors.quoted` (``'lfu:xx...' (5,000 characters)``: the count stays after it)
_LINK_PATTERN = r"(links|tier_policies)\[(" + _REPR + r")\] = (" + _REPR + r")"
_PAIR_OPTION_OF = {"links": "--link", "tier_policies": "--tier-policy"}


#: A value a message quotes from the user's input (a trace's field, a Parquet metadata value, a sweep plan's value) as
#: the messages show it: Python's repr or JSON's, ``'...'`` or ``"..."`` with backslash escapes inside; the opening
#: quote not after a letter or digit (an apostrophe: ``the trace's``); a value cut short keeps its closing quote
#: (:func:`pcs.errors.quoted`: ``"aaaa..." (1,203 characters)``), and one cut without it runs to the end of the message.
_QUOTED_PATTERN = r"""(?<!\w)(?:'(?:[^'\\]|\\.)*(?:'|\\?\Z)|"(?:[^"\\]|\\.)*(?:"|\\?\Z))"""


@functools.cache
def _patterns() -> tuple[re.Pattern, re.Pattern, re.Pattern, re.Pattern, re.Pattern]:
    """The field, link, phrase and keyword patterns of :func:`option_names`, then its scan for the quoted values it
    leaves alone (the advice the code wrote, whose own quotes belong to it, first: ``engine='auto'``), compiled on
    first use: only an error message needs them (~1 ms of start-up on every command otherwise,
    benchmarks/bench_startup.py)."""
    phrase = "|".join(re.escape(p) for p in _PHRASE_OF)
    scan = f"(?:{phrase}|{_LINK_PATTERN}|{_KWARG_PATTERN})|(?P<quoted>{_QUOTED_PATTERN})"
    return (re.compile(_FIELD_PATTERN), re.compile(_LINK_PATTERN), re.compile(phrase), re.compile(_KWARG_PATTERN),
            re.compile(scan, re.S))


def option_names(message: str, plan: bool = False) -> str:
    """``message`` with the API's keyword names replaced by their command-line options (an error raised by the
    API reaches a CLI user naming what they typed: ``--max-num-seqs``, not ``max_num_seqs``; ``--engine auto``,
    not ``engine='auto'``); with ``plan``, by a sweep plan's option names (the error of a sweep point, whose
    options are the plan's: ``max-num-seqs``, ``engine = "auto"``; docs/sweep.md).

    Only the text the code wrote is re-worded: a value the message quotes from the user's input (``got
    "block_size=16"``: a trace's field, a Parquet metadata value, a plan's value; :data:`_QUOTED_PATTERN`) comes
    back byte for byte."""
    scan = _patterns()[4]
    out, at = [], 0
    for m in scan.finditer(message):
        if m.group("quoted") is not None:
            out += [_reworded(message[at:m.start()], plan), m.group()]
            at = m.end()
    return "".join(out) + _reworded(message[at:], plan)


def _reworded(message: str, plan: bool) -> str:
    """:func:`option_names` on text the code wrote (no quoted value of the user's in it)."""
    if not message:
        return message
    phrases, cut = (_PLAN_PHRASE_OF, 2) if plan else (_PHRASE_OF, 0)
    field_re, link_re, phrase_re, kwarg_re, _ = _patterns()
    message = link_re.sub(lambda m: _toml_table(_PAIR_OPTION_OF[m.group(1)][2:], [(_repr_text(m.group(2)),
                          _repr_text(m.group(3)))]) if plan else
                          f"{_PAIR_OPTION_OF[m.group(1)]} {_pair_text(m.group(2), m.group(3))}", message)
    message = field_re.sub(lambda m: _OPTION_OF[m.group(1)][cut:], message)
    message = phrase_re.sub(lambda m: phrases[m.group(0)], message)
    if plan:        # a plan has no flags to pass: it sets its keys (set trace-format = "...")
        message = _pass_pattern().sub("set ", message)
    return kwarg_re.sub(lambda m: _kwarg(m, plan), message)


def _repr_text(shown: str) -> str:
    """The str a :data:`_REPR` literal shows (``'x\\n'`` -> ``x`` and a newline)."""
    import ast

    return ast.literal_eval(shown)


def _plain(shown: str) -> bool:
    """Whether a :data:`_REPR` literal shows its value as it is: single quotes, no escape in it."""
    return shown.startswith("'") and "\\" not in shown


def _cli_text(shown: str) -> str:
    """A value on the command line: as typed (``lfu:aging=x``), or still quoted when the message shows it escaped
    or in double quotes (``'lfu:aging=x\\n'``): what the escapes show is kept, and the option and its value are
    set apart by one space alike."""
    return _repr_text(shown) if _plain(shown) else shown


def _toml_text(shown: str) -> str:
    """A value as a sweep plan (TOML) writes it: ``"lfu:aging=x"``, a control character as ``\\u0001``."""
    import json

    return json.dumps(_repr_text(shown), ensure_ascii=False)


def _toml_table(key: str, pairs: list[tuple[str, str]]) -> str:
    """A NAME=VALUE option as a sweep plan (TOML) writes it: ``link = {"hôte" = "25GB/s"}``, ``tier = {gpu =
    "400GB"}`` (a name of letters, digits, ``_`` and ``-`` bare, any other quoted, as TOML's keys are)."""
    import json

    def name(n: str) -> str:
        return n if re.fullmatch(r"[A-Za-z0-9_-]+", n) else json.dumps(n, ensure_ascii=False)
    return f"{key} = {{" + ", ".join(f"{name(n)} = {json.dumps(v, ensure_ascii=False)}" for n, v in pairs) + "}"


def _pair_text(name: str, value: str) -> str:
    """``NAME=VALUE`` of a ``--link`` / ``--tier-policy`` from the API's two :data:`_REPR` literals: as typed
    (``cpu=lfu``), or as one quoted string when either shows escapes (``'cpu=lfu:aging=\\x01'``)."""
    if _plain(name) and _plain(value):
        return f"{_repr_text(name)}={_repr_text(value)}"
    return _joined((name, value), "=")


def _joined(shown: Sequence[str], sep: str) -> str:
    """:data:`_REPR` literals joined by ``sep`` into one, in repr's quotes: joined as shown, never decoded (a name's
    byte 0xff shows as ``\\xff``, :func:`pcs.errors.shown_repr`, which a decode would read as U+00FF); a body in
    double quotes holds a bare ``'`` (repr's choice), escaped in the single quotes."""
    bodies = [s[1:-1] if s.startswith("'") else s[1:-1].replace("'", "\\'") for s in shown]
    text = sep.join(bodies)
    return f'"{text}"'.replace("\\'", "'") if "\\'" in text and '"' not in text else f"'{text}'"   # repr's quotes


@functools.cache
def _pass_pattern() -> re.Pattern:
    """``pass `` before an API keyword (``pass format=``), which a plan's words say ``set ``, compiled on first use."""
    return re.compile(r"\bpass (?=(?:" + "|".join(sorted(_KWARG_OF, key=len, reverse=True)) + r")=)")


def _kwarg(m: re.Match, plan: bool) -> str:
    """One ``NAME=`` of an API message as the option: ``--tier gpu=400GB --tier cpu=2TB`` for
    ``tiers=['gpu=400GB', 'cpu=2TB']``, ``--timing sequential`` for ``timing='sequential'``, ``--tier`` for
    ``tiers=``, ``--block-size 16`` for ``block_size=16``; with ``plan`` the plan's words (``tier = {gpu = "400GB"}``,
    ``timing = "sequential"``, ``tier``, ``block-size = 16``; a bare ``format= (mooncake, ...)``, advice to give one
    of the values listed, ``trace-format = "..." (mooncake, ...)``: a plan has no flags to pass)."""
    flag = _KWARG_OF[m.group(1)][2 if plan else 0:]
    if m.group(2) is not None:
        shown = re.findall(_REPR, m.group(2))         # each item as the message shows it: escaped when it must be
        if not all(_plain(v) for v in shown):          # an escaped item: each shown as the command line quotes it
            return _shown_items(flag, m.group(1), shown, plan)
        items = [v[1:-1] for v in shown]
        if m.group(1) == "tier_sets":      # one tier list: one --tiers of a comma list
            return f"{flag} = {_toml_text(repr(','.join(items)))}" if plan else f"{flag} {','.join(items)}"
        if plan and all("=" in v for v in items):     # a NAME=VALUE option: the plan's table
            return _toml_table(flag, [tuple(v.split("=", 1)) for v in items])
        return " ".join(f"{flag} {v}" for v in items)
    if m.group(3) is not None:
        if plan and m.group(1) in _TABLE_KWARGS and "=" in _repr_text(m.group(3)):   # one entry of the plan's table
            return _toml_table(flag, [tuple(_repr_text(m.group(3)).split("=", 1))])
        return f"{flag} = {_toml_text(m.group(3))}" if plan else f"{flag} {_cli_text(m.group(3))}"
    if m.group(4) is not None:     # a number: block_size=16, router_stale_s=0.5
        return f"{flag} = {m.group(4)}" if plan else f"{flag} {m.group(4)}"
    if plan and m.group(1) in _FLAG_KWARGS:        # a plan sets a flag to true
        return f"{flag} = true"
    if plan and m.string.startswith(" (", m.end()):   # advice to give one of the values listed: a plan's key = value
        return f'{flag} = "..."'
    return flag


def _shown_items(flag: str, kwarg: str, shown: list[str], plan: bool) -> str:
    """A keyword's list whose items a message shows escaped (``tiers=['c\\xffpu=1GB']``, a quote: ``"cpu'=1GB"``) as
    the option: each item as shown (:func:`_cli_text`: never decoded, so a name's byte 0xff stays ``\\xff``), one
    option each (``--tiers``: one comma list); a plan's as TOML strings (:func:`_toml_text`, a list: the plan's
    ``tier = ["NAME=SIZE", ...]`` form)."""
    if plan:
        texts = [_toml_text(v) for v in shown]
        return f"{flag} = " + (_toml_text(repr(",".join(_repr_text(v) for v in shown))) if kwarg == "tier_sets"
                               else "[" + ", ".join(texts) + "]")
    if kwarg == "tier_sets":
        return f"{flag} {_joined(shown, ',')}"
    return " ".join(f"{flag} {_cli_text(v)}" for v in shown)


OUT_OF_MEMORY = ("out of memory: this run needs more memory than the process may take (a ulimit, the machine's "
                 "RAM); a smaller --block-size multiplies a trace's block accesses and the memory they take")


def _written_before_stop(written: list[str]) -> str:
    """``; complete before it: A, B (no other output was written)`` naming the outputs a stopped command had
    finished (each whole: :func:`pcs.outfile.atomic_output`), three at most then a count; '' for none."""
    if not written:
        return ""
    shown = ", ".join(written[:3]) + (f" and {len(written) - 3:,} more" if len(written) > 3 else "")
    return f"; complete before it: {shown} (no other output was written)"


def _in_option_words(exc: UserError, first: str) -> str:
    """``first``, the first line of ``exc``, in the command's words (:func:`option_names`) -- but for the file an
    :class:`pcs.errors.InputError` names at its start, which is the user's path as given (a folder named
    ``block_size=16`` is no option)."""
    path = printable(getattr(exc, "path", None) or "")      # as InputError shows it
    if isinstance(exc, InputError) and path and first.startswith(path):
        return path + option_names(first[len(path):])
    return option_names(first)


@contextlib.contextmanager
def user_errors() -> Iterator[None]:
    """Grade what escapes a command: user errors as one line (exit 2), bugs with a traceback (exit 1).

    User errors (:class:`PcsUsageError`, one line ``pcs: error: ...``):
    click's ``UsageError`` (bad option values, missing options, unknown
    commands: one line naming the command's ``--help``);
    :class:`pcs.errors.UserError`, the house grade for bad user input, with
    its subclasses :class:`pcs.errors.InputError` (file content) and
    :class:`pcs.errors.UnknownNameError` (registry lookups: models, GPUs,
    links, policies); ``OSError`` on a file (missing, a directory, no
    permission ...); ``MemoryError`` (one line saying so, temporary files removed). Every other exception -- a plain ``ValueError`` too
    (Python and numpy raise it for bugs: unpacking, shapes), ``AssertionError``,
    ``TypeError``, ``KeyError`` ... -- is a bug in pcs (:class:`PcsInternalError`). A closed pipe (``pcs ... | head``) ends
    quietly. Ctrl-C is one line ``pcs: interrupted`` and exit 130; SIGTERM
    (SIGHUP) one line and exit 143 (129); either way the temporary files are
    gone (:mod:`pcs.outfile`) and the line names the outputs already complete (kept: each is whole). Grades: :mod:`pcs.errors`.
    """
    from pcs.outfile import WRITTEN, remove_temporary

    WRITTEN.clear()
    try:
        yield
    except KeyboardInterrupt:
        ignore_stop_signals()
        remove_temporary()
        raise PcsStopped(f"interrupted{_written_before_stop(WRITTEN)}", 130) from None
    except Terminated as exc:
        ignore_stop_signals()
        remove_temporary()
        raise PcsStopped(f"terminated by {signal.Signals(exc.signum).name}{_written_before_stop(WRITTEN)}",
                         128 + exc.signum) from None
    except _HELP_FOR_NO_ARGS:       # `pcs trace` alone: the group's help (it was `pcs: error: Usage: ...`)
        raise
    except click.UsageError as exc:  # click's own parse errors: one line too, not usage + hint + error
        raise PcsUsageError(_usage_line(exc)) from None
    except (click.ClickException, click.exceptions.Exit, click.Abort):
        raise
    except PathError as exc:      # the API's keyword (trace=, path=) is no option of the command: the parameter as typed
        label = getattr(exc, "cli_label", None)
        raise PcsUsageError(f"{label + ' ' if label else ''}{shown_path(exc.path)}: {exc.problem}") from None
    except UserError as exc:     # a sweep plan's refusal is in the plan's words already (pcs.sweep.kinds.PlanError)
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise PcsUsageError(first if getattr(exc, "plan_words", False) else _in_option_words(exc, first)) from None
    except ValueError as exc:
        if "embedded null byte" not in str(exc):   # os.stat/open of a path holding "\0" (API or test runner argv)
            raise PcsInternalError(exc) from None
        raise PcsUsageError("a path given on the command line contains a NUL byte (\\x00)") from None
    except BrokenPipeError:  # `pcs ... | head`
        sys.stderr.close()
    except OSError as exc:
        raise PcsUsageError(_os_error_line(exc)) from None
    except MemoryError:
        remove_temporary()
        raise PcsUsageError(OUT_OF_MEMORY) from None
    except Exception as exc:  # noqa: BLE001 - everything else is a bug: show it, say so
        raise PcsInternalError(exc) from None


#: ``ctx.meta`` key a group sets when it supplied the subcommand the user left out (``pcs sweep PLAN`` runs
#: ``pcs sweep run PLAN``): (the command line as typed, as run), so a refusal names the command the user typed too.
SHORT_FOR = "pcs.short_for"


def _usage_line(exc: click.UsageError) -> str:
    """click's parse error as one line naming the command's ``--help`` (and, for a shorthand, the command as typed:
    ``(see 'pcs sweep run --help'; 'pcs sweep PLAN' is short for 'pcs sweep run PLAN')``, :data:`SHORT_FOR`); an
    argument named as every other refusal names it (``TRACE``, not ``[TRACE]``: :func:`pcs.cli.iofiles.param_label`)."""
    where = f" (see '{exc.ctx.command_path} --help')" if exc.ctx is not None else ""
    typed, run = exc.ctx.meta.get(SHORT_FOR, ("", "")) if exc.ctx is not None else ("", "")
    if typed and run.startswith(exc.ctx.command_path + " "):
        where = f" (see '{exc.ctx.command_path} --help'; '{typed}' is short for '{run}')"
    if isinstance(exc, click.BadParameter) and isinstance(exc.param, click.Argument) and exc.param_hint is None:
        from pcs.cli.iofiles import param_label

        exc.param_hint = repr(param_label(exc.param, exc.ctx))
    if isinstance(exc, RegistryRefusal):          # the one form of a refused policy, admission kind or router value
        return exc.format_message()
    if isinstance(exc, click.NoSuchOption) and exc.ctx is not None and exc.option_name.startswith("--"):
        return f"{_option_typo(exc.option_name, exc.ctx)}{where}"
    return f"{repr_bytes(exc.format_message())}{where}"      # click's repr of a value: a byte as \xff


def _option_typo(typed: str, ctx: click.Context) -> str:
    """The refusal of ``typed``, a long option ``ctx``'s command lacks, with the "did you mean" of every unknown name
    (:func:`pcs.choices.did_you_mean`'s rule, the one a sweep plan's mistyped key gets): compared without the
    dashes, the closest first, one option once (an :class:`pcs.cli.params.Aliased` option's hidden spellings
    count as it): ``No such option '--teir'; did you mean '--tier'?`` (click listed its candidates sorted,
    ``'--dtype', '--router', '--tier'``); none close: click's ``No such option '--xyz'.``."""
    from pcs.choices import close_names, meant

    names: dict[str, str] = {}
    aliases: dict[str, str] = {}
    for p in ctx.command.get_params(ctx):
        longs = [o for o in (*p.opts, *p.secondary_opts) if o.startswith("--")]
        for o in longs:
            names[o[2:].lower()] = o
            if o != longs[0]:
                aliases[o[2:].lower()] = longs[0][2:].lower()
    exact = names.get(typed[2:].lower())
    close = [exact[2:]] if exact else close_names(typed[2:], [n for n in names if n not in aliases], aliases)
    if not close:
        return f"No such option {shown_repr(typed)}."
    return f"No such option {shown_repr(typed)}; {meant(names[c.lower()] for c in close).strip()}"


def _os_error_line(exc: OSError) -> str:
    """An ``OSError`` on a file as one line: the parameter as typed when known (``cli_label``), the file name
    (:func:`pcs.errors.shown_path`: escaped, cut at 200 characters), the system's reason."""
    label = getattr(exc, "cli_label", None)
    where = (f"{label + ' ' if label else ''}{shown_path(exc.filename)}: "
             if exc.filename is not None else "")
    return f"{where}{exc.strerror or exc}"


class RegistryChoice(click.Choice):
    """A ``click.Choice`` over a registry's names that also accepts its aliases, checked by the registry.

    The value reaches the command as the user wrote it (so a result that
    echoes it stays as today); ``lookup`` (e.g.
    :func:`pcs.cache.policies.get_policy`) decides validity and raises
    ``ValueError`` naming the valid names, which becomes click's one-line
    usage error naming the option.

    Args:
        choices: the names shown in ``--help`` (registered names, then aliases).
        lookup: callable raising ``ValueError`` for an unknown name.
    """

    def __init__(self, choices: Iterable[str], lookup: Callable[[str], Any]) -> None:
        super().__init__(list(choices), case_sensitive=False)
        self.lookup = lookup

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        try:
            self.lookup(value)
        except ValueError as exc:
            raise RegistryRefusal(str(exc), value, ctx=ctx, param=param) from None
        return value


class RegistryRefusal(PickledAsIs, click.BadParameter):
    """A :class:`RegistryChoice` value its registry refuses, worded as every refusal of a policy, admission kind or
    router value: ``--router least-loaded:x: router 'least-loaded': bad option 'x' ...`` (the option, the value as
    typed, the registry's message), as ``--policy lru:x=1: ...`` and ``--admit cpu=bogus: ...`` are -- one form, no
    ``Invalid value for '--router'`` and no ``(see 'pcs replay --help')`` after it (:func:`_usage_line`); a
    sweep plan words it ``router = "least-loaded:x": ...`` (:func:`pcs.sweep.kinds._parse`).

    Attributes:
        value: the value as given, also kept as ``refused_value`` (a sweep plan names the line of the entry that
            holds it: ``tier-policy = {gpu = "p10"}``'s ``gpu=p10``, :func:`pcs.sweep.api._at`); ``flag``: the
            option's long name (``--router``)."""

    def __init__(self, message: str, value: Any = None, *, ctx: click.Context | None = None,
                 param: click.Parameter | None = None):
        super().__init__(message, ctx, param)
        self.value = self.refused_value = value
        self.flag = next((o for o in getattr(param, "opts", ()) if o.startswith("--")), None) or "value"

    def format_message(self) -> str:
        return f"{self.flag} {as_typed(str(self.value), 200)}: {option_names(self.message)}"     # the registry's API words, the CLI's


def _refuse_repeated_options(cmd: click.Command, ctx: click.Context, args: list[str]) -> None:
    """A value option that is not ``multiple`` given more than once: a usage error (not "last one wins")."""
    try:
        _, _, order = cmd.make_parser(ctx).parse_args(args=list(args))
    except click.UsageError:
        return  # click's own parse reports it
    seen: set[str] = set()
    for p in order:
        if not isinstance(p, click.Option) or p.multiple or p.count or p.is_flag:
            continue
        if p.name in seen:
            raise click.UsageError(f"{_typed(p, args)} was given more than once; it takes one value", ctx)
        seen.add(p.name)


def typed_flag(*names: str) -> str:
    """Which of ``names`` (one option's spellings, ``"--overhead", "--setup"``) the command line used, for a
    message naming the flag as typed; the first name when none is known (an API call, no context).
    """
    ctx = click.get_current_context(silent=True)
    typed = ctx.meta.get("pcs.typed", []) if ctx is not None else []
    return next((a for a in reversed(typed) if a in names), names[0])


def _typed(p: click.Option, args: list[str]) -> str:
    """The long spellings of ``p`` the command line used (``--setup``, ``--overhead/--setup``), else its longest
    name: an option with an alias is named as typed."""
    longs = [o for o in p.opts if o.startswith("--")]
    typed = list(dict.fromkeys(a.split("=", 1)[0] for a in args if a.split("=", 1)[0] in longs))
    return "/".join(typed) if len(longs) > 1 and typed else max(p.opts, key=len)


def check_settings() -> None:
    """Refuse a bad process setting, ``PCS_THREADS`` (:func:`pcs.beside.check_threads_setting`) or ``PCS_NATIVE``
    (:func:`pcs._native.default_mode`), before any command runs (:meth:`PcsCommand.invoke`), whether or not the
    command reads it (``pcs footprint`` runs no replay and no twin): a misspelt setting is reported, never ignored
    by one command and refused by another (``pcs --help``, Environment). ``--help`` is answered all the same.

    Unset (the usual case: ``auto``) nothing is imported: pcs.beside and pcs._native cost ~6 ms of start-up to a
    command that reads neither (``-X importtime``: 4.8 and 1.4 ms).

    Raises:
        UserError: ``environment variable PCS_THREADS='bogus' is not one of ...: unset it or set one of those``.
    """
    if "PCS_THREADS" in os.environ:
        from pcs.beside import check_threads_setting

        check_threads_setting()
    if "PCS_NATIVE" in os.environ:
        from pcs._native import default_mode

        default_mode()


class PcsCommand(click.Command):
    """A pcs command: repeated single-value options are refused; ``twins=True`` commands note missing C twins.

    Args:
        twins: the command runs compiled twins (:mod:`pcs._native`); when
            one is not built it prints :func:`pcs._native.missing_note` once,
            on stderr, unless ``--quiet`` (the twins are imported either way, before the collector is released).
        preload: modules the command will import anyway, imported once its command line is parsed and before the
            garbage collector is released (:func:`pcs.cli.main.release_gc`): what they make is frozen with the
            rest of start-up instead of being walked by the command's first collections.
    """

    def __init__(self, *args: Any, twins: bool = False, preload: tuple[str, ...] = (), **kwargs: Any) -> None:
        # -h and --help on every command, also when it is invoked on its own (a test, a sweep worker): click
        # builds a command's help option once, from the first context, and keeps it
        kwargs.setdefault("context_settings", {}).setdefault("help_option_names", ["-h", "--help"])
        super().__init__(*args, **kwargs)
        self.twins = twins
        self.preload = preload

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        _refuse_repeated_options(self, ctx, args)
        ctx.meta["pcs.typed"] = [a.split("=", 1)[0] for a in args if a.startswith("--")]   # see typed_flag
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        from pcs.cli.iofiles import check_command_files

        check_settings()
        check_command_files(ctx)    # no output may name an input; notes on the model it reads
        for name in self.preload:
            importlib.import_module(name)
        if self.twins:
            from pcs._native import missing_note

            note = missing_note()   # imports the twins, with --quiet too: before the collector is released
            if note and not ctx.params.get("quiet"):
                click.echo(f"pcs: note: {note}", err=True)
        release_gc()   # the command line is parsed and its modules loaded: start-up is over (pcs.cli.main)
        try:
            return super().invoke(ctx)
        except (PathError, OSError) as exc:    # the parameter that named the path, as typed (user_errors prints it)
            from pcs.cli.iofiles import label_of_value

            path = exc.path if isinstance(exc, PathError) else exc.filename
            exc.cli_label = label_of_value(ctx, os.fspath(path)) if isinstance(path, (str, os.PathLike)) else None
            raise
        except UnknownNameError as exc:
            raise _with_option(ctx, exc) from None


def _with_option(ctx: click.Context, exc: UnknownNameError) -> UnknownNameError:
    """``exc``, a registry's refusal of a name (a model, GPU, link ...), led by the option that gave the name, as
    typed, when one parameter of the command line holds that name (:func:`pcs.cli.iofiles.label_of_value`):
    ``--model: unknown model 'xxx'; valid: ...``, as ``--name: ...`` and the other refusals of a value name their
    option. The API's message is the registry's alone (``unknown model 'xxx'``); a name read from a file (a sweep
    plan, a hardware file) names no option and is left as it is."""
    from pcs.cli.iofiles import label_of_value

    label = label_of_value(ctx, exc.name) if isinstance(exc.name, str) else None
    if label is not None:
        text, lead = str(exc), getattr(exc, "lead", None)      # the API's model='x' lead: the option says it
        text = text[len(lead) + 2:] if lead and text.startswith(f"{lead}: ") else text
        exc.args = (f"{label}: {text}",)
    return exc


class PcsGroup(click.Group):
    """A command group whose ``@group.command`` makes :class:`PcsCommand` s, and whose parse errors are the
    project's one line (:func:`user_errors`' form): a subcommand it lacks named with the closest ones
    (:func:`no_such_command`), an option it lacks with the "did you mean" of :func:`_option_typo`."""

    command_class = PcsCommand

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """click's parse, a refusal of it raised as :class:`PcsUsageError`: the top group ``pcs`` is parsed
        before any command's :func:`user_errors` is in place (``pcs --verison`` printed click's usage block)."""
        try:
            return super().parse_args(ctx, args)
        except _HELP_FOR_NO_ARGS:       # `pcs trace` alone: its help, as click gives it
            raise
        except click.UsageError as exc:
            raise PcsUsageError(_usage_line(exc)) from None

    def resolve_command(self, ctx: click.Context,
                        args: list[str]) -> tuple[str | None, click.Command | None, list[str]]:
        """click's, but a name that is no subcommand is refused by :func:`no_such_command` (one that looks like an
        option is left to click, which parses it as one)."""
        name = args[0] if args else ""
        if name and not name.startswith("-") and not ctx.resilient_parsing and self.get_command(ctx, name) is None:
            raise no_such_command(name, ctx)
        return super().resolve_command(ctx, args)


def no_such_command(name: str, ctx: click.Context) -> click.UsageError:
    """The refusal of ``name``, a subcommand the group of ``ctx`` lacks, with the "did you mean" of every unknown
    name (:func:`pcs.choices.close_names` over the group's commands): ``No such command 'replya'; did you mean
    'replay'?`` (the top group suggested none: it loads its commands lazily, and click's list was empty); none
    close: click's ``No such command 'xyz'.``. :func:`user_errors` prints it with the group's ``--help``."""
    from pcs.choices import close_names, meant

    close = close_names(name, ctx.command.list_commands(ctx))
    return click.UsageError(f"No such command {shown_repr(name)}" + (f"; {meant(close).strip()}" if close else "."), ctx)


#: click's "no arguments: show the help" (click 8.2 on: a UsageError whose ``show`` prints the help; before, the
#: help was printed and the context exited): passed through as it is, never made a one-line error.
_HELP_FOR_NO_ARGS = getattr(click.exceptions, "NoArgsIsHelpError", ())


#: ``@command("name")``: ``click.command`` making a :class:`PcsCommand`.
command = functools.partial(click.command, cls=PcsCommand)


def apply_options(options: list[Callable], f: Callable) -> Callable:
    """``f`` decorated with each click option of ``options``, listed in ``--help`` in the order given."""
    for option in reversed(options):
        f = option(f)
    return f


def quiet_option(f: Callable) -> Callable:
    """``-q/--quiet``: no progress bar and no notes on stderr (every command takes it)."""
    return click.option("--quiet", "-q", is_flag=True, help="No progress bar and no notes on stderr.")(f)


def format_option(f: Callable) -> Callable:
    """``--format table|json|csv`` (default table)."""
    return click.option(
        "--format", "fmt", type=Choice(["table", "json", "csv"]), default="table",
        show_default=True, help="Output format. JSON keys are documented in docs/json.md and stay stable.",
    )(f)


def to_jsonable(obj: Any) -> Any:
    """Convert numpy scalars/arrays, tuples and non-finite floats for JSON.

    NaN and infinities become ``None`` (JSON has no spelling for them). A string is kept as it is: a file name that
    is not UTF-8 (held as surrogate escapes) prints as JSON's escape of each (``\\udcff``, ``json.dumps`` with
    ``ensure_ascii``), which Python's reader turns back into the name on disk, so ``pcs report`` finds the trace of
    such a JSON (review 47p: the escape as text, ``\\xff``, lost it; docs/json.md).
    """
    try:
        import numpy as np
    except ImportError:  # pragma: no cover
        np = None
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if np is not None:
        if isinstance(obj, np.ndarray):
            return [to_jsonable(v) for v in obj.tolist()]
        if isinstance(obj, np.generic):
            obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def _csv_text(rows: list[dict[str, Any]]) -> str:
    """The CSV of ``rows`` (the columns in first-seen order), every text cell and column name through the
    formula guard (:func:`pcs.csvcells.guard_cell`: ``=cmd|x`` is written ``'=cmd|x``; numbers unchanged); a cell
    holding an object or a list (compare's ``hit_ratio_per_tier``, ``payload_lens``) is written as JSON text, as a
    sweep's rows write their lists (docs/sweep.md), not as Python's repr (``{'gpu': 0.5}``), which no CSV reader
    parses."""
    import csv   # --format csv only

    from pcs.csvcells import guard_cell

    buf = io.StringIO()
    if rows:
        fields: list[str] = []
        for row in rows:
            for k in row:
                if k not in fields:
                    fields.append(k)
        w = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
        w.writerow({k: guard_cell(k) for k in fields})
        for row in rows:
            w.writerow({k: _csv_cell(v) for k, v in to_jsonable(row).items()})
    return buf.getvalue()


def _csv_cell(v: Any) -> Any:
    """One CSV cell of a JSON-able value: None empty, an object or a list as compact JSON text, then the formula
    guard (:func:`_csv_text`)."""
    from pcs.csvcells import guard_cell

    if v is None:
        return ""
    if isinstance(v, (dict, list)):
        v = json.dumps(v, separators=(",", ":"))
    return guard_cell(v)


def with_trace_notes(payload: dict[str, Any], trace: Any, fmt: str, quiet: bool) -> tuple[str, ...]:
    """Add the notes about ``trace`` (:func:`pcs.trace.api.trace_notes`: synthetic reuse, skipped lines) to
    ``payload["notes"]`` and, outside the table format and without ``-q``, print them on stderr as
    ``pcs replay`` does; returns them (the table renderer prints them as ``note:`` lines). The skipped lines
    named go to ``payload["skipped_lines"]`` too (:func:`with_skipped_lines`)."""
    from pcs.trace.api import trace_notes

    with_skipped_lines(payload, trace)
    drop_api_trace_notes(payload, trace)
    return add_notes(payload, tuple(trace_notes(trace, option_names)), fmt, quiet)


def drop_api_trace_notes(payload: dict[str, Any], trace: Any) -> dict[str, Any]:
    """``payload`` (changed in place) without the trace's caveats an API result appended last to its ``notes`` in
    the API's words (:func:`pcs.trace.api.trace_notes`: ``pcs.fleet_replay``), before a command gives them in its
    own (the key stays where it is, holding the notes before them)."""
    from pcs.trace.api import trace_notes

    api, notes = list(trace_notes(trace)), list(payload.get("notes") or ())
    if api and notes[-len(api):] == api:
        payload["notes"] = notes[:-len(api)]
    return payload


def with_skipped_lines(payload: dict[str, Any], trace: Any,
                       words: Callable[[str], str] | None = None) -> dict[str, Any]:
    """``payload`` with ``"skipped"``, how many lines (Parquet: rows) the read of ``trace`` skipped
    (``Trace.skipped``; always present, 0 for a clean read, the key and count of ``pcs trace stats``), and
    ``"skipped_lines"``: the first of them named (:func:`pcs.trace.api.skipped_lines_json`, in ``words``: None,
    the command's, :func:`option_names`; a sweep point's, its plan's), when it skipped any (else that key is left
    out)."""
    from pcs.trace.api import skipped_lines_json

    payload["skipped"] = int(getattr(trace, "skipped", 0))
    named = skipped_lines_json(trace, words or option_names)
    if named:
        payload["skipped_lines"] = named
    return payload


def skipped_lines_in_words(payload: dict[str, Any]) -> dict[str, Any]:
    """An API result's dict (``pcs trace stats``, ``pcs trace convert``) as its command prints it: the skipped lines
    it names (``"skipped_lines"``, :func:`pcs.trace.api.skipped_lines_json`'s objects) with their ``problem`` and
    ``message`` in the command's words (:func:`option_names`: ``--sort``, not ``sort=``), and that key left out when
    the read skipped none, as every command leaves it out (:func:`with_skipped_lines`, docs/json.md; ``pcs trace
    stats`` printed ``[]``). The other keys keep their order."""
    from pcs.trace.hashids import SkippedLine

    def worded(e: dict[str, Any]) -> dict[str, Any]:     # the problem re-worded, the path as the user gave it
        problem = option_names(e["problem"])
        line = e["row"] if "row" in e else e["line"]
        return {**e, "problem": problem, "message": SkippedLine(e["file"], line, e["field"], problem).message}
    return {k: [worded(e) for e in v] if k == "skipped_lines" else v for k, v in payload.items()
            if k != "skipped_lines" or v}


def add_notes(payload: dict[str, Any], notes: tuple[str, ...], fmt: str, quiet: bool) -> tuple[str, ...]:
    """Add ``notes`` to ``payload["notes"]`` and, outside the table format and without ``-q``, print each on
    stderr as ``pcs: note: ...``; returns them (the table renderer prints them as ``note:`` lines)."""
    if notes:
        payload["notes"] = list(payload.get("notes") or []) + list(notes)
        if not quiet and fmt != "table":
            for note in notes:
                click.echo(f"pcs: note: {note}", err=True)
    return notes


def emit(payload: dict[str, Any], fmt: str, table: str | Callable[[], str], rows_key: str | None = "rows") -> None:
    """Print one result in the chosen format.

    Args:
        payload: the JSON object (stable keys, documented in docs/).
        fmt: ``table``, ``json`` or ``csv``.
        table: the rendered table, or a callable returning it.
        rows_key: for CSV, the payload key holding a list of row dicts; when
            absent or None the flat scalar fields of ``payload`` make one row.
    """
    if fmt == "json":
        click.echo(json.dumps(to_jsonable(payload), indent=2))
    elif fmt == "csv":
        rows = payload.get(rows_key) if rows_key else None
        if not isinstance(rows, list):
            rows = [{k: v for k, v in payload.items() if not isinstance(v, (dict, list))}]
        click.echo(utf8_text(_csv_text(rows)), nl=False)
    else:
        click.echo(utf8_text(table() if callable(table) else table))
