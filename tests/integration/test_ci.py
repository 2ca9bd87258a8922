"""`tunebench ci` on the sandbox: the first run under a new name starts the series (exit 0, Markdown, valid JUnit
XML, the session tagged); bad input is one line, exit 2, before anything runs."""

import xml.etree.ElementTree as ET

import pytest

pytestmark = pytest.mark.integration


def test_the_first_ci_run_starts_its_series(sandbox, cli, tmp_path):
    db, junit, md = str(tmp_path / "s.sqlite"), tmp_path / "ci.xml", tmp_path / "ci.md"
    for args, says in ((("--baseline", "has space"), "--baseline is a name"),
                       (("--baseline", "ok", "--junit", str(tmp_path / "no" / "x.xml")), "no folder")):
        bad = cli("--db", db, "ci", "ci-update-index", *args, refused=True)
        assert bad.returncode == 2 and says in bad.stderr and bad.stderr.count("\n") == 1, bad.stderr
    assert cli("--db", db, "sessions", "list", "--json").stdout.strip() == "[]"  # nothing ran
    out = cli("--db", db, "ci", "ci-update-index", "--baseline", "upd", "--step-seconds", "3", "--junit", str(junit),
              "--markdown", str(md), timeout=240)
    assert out.returncode == 0, out.stderr
    text = md.read_text()
    assert text.startswith("## tunebench ci: upd -- no regression") and "it starts the series" in text, text
    # not judged: no earlier session (or, beside the suite's other workers, the machine was busy: said first)
    assert "| 4 thr | TPS |" in text and ("not judged: 0 earlier session(s)" in text
                                          or "not judged: the machine was busy" in text), text
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None and (suite.get("tests"), suite.get("failures")) == ("1", "0")
    show = cli("--db", db, "sessions", "list", "--json")
    assert '"tags": "ci:upd"' in show.stdout, show.stdout
