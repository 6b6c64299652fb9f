"""The code location's settings: read and validated once, when the pipeline is imported.

Dagster imports the pipeline's modules to load the code location (webserver,
daemon, every run's process); the CLI's ``materialize`` and the demo import
the same modules. What must be known when a definition is made (the day
partitions, the schedules' zone, where dbt keeps its manifest) comes from
this one object; what an asset needs at run time comes from the resources,
built from it too (:func:`~sms_pipeline.orchestration.resources.build_resources`).
"""

from __future__ import annotations

from sms_pipeline import settings as settings_module

SETTINGS = settings_module.load()
