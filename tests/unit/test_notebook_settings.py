"""settings_from_widgets: defaults, Databricks widgets (a stand-in for dbutils.widgets), key=value arguments."""

import pytest

from connect_spark.api.errors import ConfigException
from connect_spark.notebook import settings_from_widgets


class Widgets:
    """Databricks' widget semantics: ``text`` declares a widget with a default unless a job parameter set it."""

    def __init__(self, job_parameters):
        self.values = dict(job_parameters)
        self.declared = []

    def text(self, name, default_value, label=None):
        self.declared.append(name)
        self.values.setdefault(name, default_value)

    def get(self, name):
        return self.values[name]


class DbUtils:
    def __init__(self, job_parameters):
        self.widgets = Widgets(job_parameters)


DEFAULTS = {"topic": "orders", "run.seconds": 60}


def test_widgets_declared_for_every_key_and_job_parameters_win():
    dbutils = DbUtils({"topic": "payments"})
    assert settings_from_widgets(dbutils, DEFAULTS) == {"topic": "payments", "run.seconds": "60"}
    assert dbutils.widgets.declared == ["topic", "run.seconds"]


def test_script_arguments_override_defaults():
    assert settings_from_widgets(None, DEFAULTS, ["run.seconds=5"]) == {"topic": "orders", "run.seconds": "5"}
    assert settings_from_widgets(None, DEFAULTS, []) == {"topic": "orders", "run.seconds": "60"}


def test_bad_arguments_name_the_key_and_value():
    with pytest.raises(ConfigException) as error:
        settings_from_widgets(None, DEFAULTS, ["topics=x"])
    assert "topics" in str(error.value) and "x" in str(error.value) and "run.seconds, topic" in str(error.value)
    with pytest.raises(ConfigException) as error:
        settings_from_widgets(None, DEFAULTS, ["topic"])
    assert "key=value" in str(error.value)
