"""Plug-ins: a package registers a policy through the ``pcs.policies`` entry point.

The tiny package in ``tests/cache/plugin/`` is "installed" into a temporary
directory (the module plus a ``.dist-info`` with ``entry_points.txt``, what pip
writes) put on ``PYTHONPATH`` of fresh processes: ``pcs policies`` lists it,
``pcs replay --policy demo_mru`` runs it, and the contract test
(``test_policies_contract.py``) runs over it with the built-in policies.
Broken entry points are left out and reported (``load_plugins`` with stand-in entry points).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

from helpers import ROOT
from pcs.cache import policies as reg

HERE = Path(__file__).parent
PCS = ("-c", "import sys; from pcs.cli.main import main; sys.argv[0] = 'pcs'; main()")


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("site")
    shutil.copy(HERE / "plugin" / "pcs_demo_policy.py", d)
    info = d / "pcs_demo_policy-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: pcs-demo-policy\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[pcs.policies]\ndemo_mru = pcs_demo_policy:DemoMRU\n"
                                          "demo_mru_array = pcs_demo_policy:DemoMRUArray\n")
    return d


def _run(site: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), str(ROOT / "tests")]))
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)


def test_pcs_policies_lists_the_plugin(site):
    out = _run(site, *PCS, "policies", "--format", "json")
    assert out.returncode == 0, out.stderr
    rows = {r["name"]: r for r in json.loads(out.stdout)["policies"]}
    assert rows["demo_mru"]["origin"] == "pcs-demo-policy"
    assert rows["demo_mru"]["options"] == {"keep_first": 0} and "MRU" in rows["demo_mru"]["source"]
    assert rows["lru"]["origin"] == "pcs"
    # the contract each implements: block keys (base.py) or handles (array.py: DemoMRUArray)
    assert (rows["demo_mru"]["contract"], rows["demo_mru_array"]["contract"], rows["lru"]["contract"]) == \
        ("keys", "array", "keys")


@pytest.mark.parametrize("name", ["demo_mru", "demo_mru_array"])
def test_replay_runs_the_plugin(site, name):
    out = _run(site, *PCS, "replay", str(ROOT / "traces" / "sample_chat.jsonl"), "--policy",
               name, "--timing", "sequential", "--tier", "gpu=2000blocks", "--format", "json", "-q")
    assert out.returncode == 0, out.stderr
    s = json.loads(out.stdout)
    # hosted by the compiled hierarchy (pcs/cache/_pol_py.c, _pol_pyarr.c) where it is built
    assert s["tiers"][0]["policy"] == name and s["engine"] in ("compiled-hierarchy", "reference")
    assert 0 < s["hit_ratio"] < 1


def test_the_contract_test_runs_over_the_plugin(site):
    out = _run(site, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(HERE / "test_policies_contract.py"),
               "-k", "demo_mru")
    assert out.returncode == 0, out.stdout[-2000:]
    assert " passed" in out.stdout and "demo_mru" not in out.stdout.split("passed")[-1]


class _EP:
    """A stand-in entry point whose load() raises or returns a given object."""

    def __init__(self, name, obj):
        self.name, self.value, self._obj, self.dist = name, f"x:{name}", obj, None

    def load(self):
        if isinstance(self._obj, Exception):
            raise self._obj
        return self._obj


def test_broken_plugins_are_left_out_and_reported(monkeypatch):
    monkeypatch.setattr(reg, "PLUGIN_ERRORS", [])
    monkeypatch.setattr(reg, "_POLICIES", dict(reg._POLICIES))
    monkeypatch.setattr(reg, "POLICY_ORIGINS", dict(reg.POLICY_ORIGINS))
    eps = [_EP("bad", ImportError("no module named x")), _EP("notapolicy", dict), _EP("lru", reg.LRUPolicy),
           _EP("other", reg.LRUPolicy)]
    assert reg.load_plugins(eps) == []
    assert [e.split(" = ")[0] for e in reg.PLUGIN_ERRORS] == ["bad", "notapolicy", "lru", "other"]
    assert "already registered" in reg.PLUGIN_ERRORS[2] and "differs from the class's name" in reg.PLUGIN_ERRORS[3]
    # a lookup of a plug-in left out says why, not only "unknown" (pcs policies lists the same line)
    with pytest.raises(ValueError, match=r"unknown eviction policy 'NotAPolicy'.*\(plug-in notapolicy = .*"
                                         r"is not an EvictionPolicy subclass; see pcs policies\)"):
        reg.get_policy("NotAPolicy")
    with pytest.raises(ValueError) as err:
        reg.get_policy("nosuch")
    assert "plug-in" not in str(err.value)
    ep = EntryPoint("demo_mru", "pcs_demo_policy:DemoMRU", "pcs.policies")
    monkeypatch.syspath_prepend(str(HERE / "plugin"))
    assert reg.load_plugins([ep]) == ["demo_mru"] and reg.get_policy("demo_mru").name == "demo_mru"


def test_unknown_policy_error_and_help_name_the_plugins(site):
    # the unknown-name error lists the installed plug-in beside the built-ins, for --policy and
    # --tier-policy; both helps say plug-ins work (pcs policies) and show NAME:OPTION=VALUE
    for opt, val in (("--policy", "nosuch"), ("--tier-policy", "cpu=nosuch")):
        out = _run(site, *PCS, "replay", str(ROOT / "traces" / "sample_chat.jsonl"), opt, val, "-q")
        assert out.returncode == 2 and "unknown eviction policy 'nosuch'" in out.stderr, out.stderr
        assert "lru, slru" in out.stderr and "demo_mru" in out.stderr, out.stderr
    text = " ".join(_run(site, *PCS, "replay", "--help").stdout.split())
    assert "NAME:OPTION=VALUE" in text and text.count("installed plug-in (pcs policies") == 2, text
