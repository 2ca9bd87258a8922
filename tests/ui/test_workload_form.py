"""The workload form is the family's: its form options, its mix, a More field for the rest, all checked by the
family as `tunebench run -o` checks them."""

import pytest

from tunebench.core.errors import ConfigError


def test_the_form_follows_the_workload_family(win):
    w = win.workload
    w.workload.setCurrentText("tpcc")
    assert list(w.editors) == ["scale", "tables", "use_fk", "trx_level", "mode"]
    mode = w.editors["mode"]  # the statements: the specification's or sysbench-tpcc's
    assert [mode.itemText(i) for i in range(mode.count())] == ["spec", "sysbench-tpcc"]
    assert mode.currentText() == "spec"
    assert "tpcc family" in w.family_label.text() and "new_order 10" in w.family_label.text()
    assert "NOPM" in w.family_label.text()
    assert "mysql_storage_engine" in w.more_options.toolTip()
    w.editors["scale"].setValue(3)
    w.editors["trx_level"].setCurrentText("RC")
    mode.setCurrentText("sysbench-tpcc")
    w.more_options.setText("mysql_storage_engine=innodb")
    spec = w.run_spec()
    assert spec.groups[0].family.name == "tpcc"
    assert spec.groups[0].options["scale"] == 3 and spec.groups[0].options["trx_level"] == "RC"
    assert spec.groups[0].options["mode"] == "sysbench-tpcc"
    w.more_options.setText("range_size=5")
    with pytest.raises(ConfigError, match="unknown option 'range_size'; known: mode, mysql_storage_engine, scale"):
        w.run_spec()
    w.more_options.setText("scale")
    with pytest.raises(ConfigError, match="--option wants NAME=VALUE, got 'scale'"):
        w.run_spec()
    w.more_options.clear()
    # a second group of another family keeps its own data set; of the same family, it takes the main one's
    w.second.setChecked(True)
    w.second_workload.setCurrentText("oltp_read_only")
    spec = w.run_spec()
    assert [g.family.name for g in spec.groups] == ["tpcc", "oltp"]
    assert spec.groups[1].options["table_size"] == 10000
    w.workload.setCurrentText("dbstress_rw1")  # a preset's fixed option is shown, not editable
    assert w.editors["mix"].currentText() == "rw1" and not w.editors["mix"].isEnabled()
    assert w.editors["objects"].isEnabled()
    w.workload.setCurrentText("oltp_read_write")
    assert "table_size" in w.editors and "tpcc" not in w.family_label.text()
    assert "mix" not in w.family_label.text()  # one transaction type
