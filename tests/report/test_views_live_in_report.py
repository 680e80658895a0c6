"""One renderer per view, in pcs/report/ (the layout: cli/ parses options, calls the API, hands the payload to a
renderer of pcs/report and emits it): no module of pcs/cli builds a table itself."""
from pathlib import Path

import pcs

CLI = Path(pcs.__file__).parent / "cli"


def test_no_cli_module_renders_a_table():
    offenders = [p.name for p in sorted(CLI.glob("*.py")) if "render_table" in p.read_text()]
    assert offenders == []


def test_deploy_and_policies_render_through_report(monkeypatch):
    """pcs deploy and pcs policies print what pcs.report.deploy / pcs.report.policies return."""
    from click.testing import CliRunner

    from pcs.cli.main import cli

    monkeypatch.setattr("pcs.report.deploy.render_deploy", lambda d: f"DEPLOY {d['model']}")
    monkeypatch.setattr("pcs.report.policies.render_policies", lambda pol, adm, errors: f"POLICIES {len(pol)}")
    out = CliRunner().invoke(cli, ["deploy", "--model", "llama-3.1-8b", "--gpu", "h100"]).output
    assert out.strip() == "DEPLOY llama-3.1-8b"
    out = CliRunner().invoke(cli, ["policies"]).output
    assert out.strip() == f"POLICIES {len(pcs.choices.BUILTIN_POLICIES)}"
