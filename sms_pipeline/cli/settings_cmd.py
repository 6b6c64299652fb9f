"""``sms-pipeline settings``: every setting, its default and its current value."""

from __future__ import annotations

import argparse
import os

from sms_pipeline import settings as settings_module
from sms_pipeline.settings import Settings


def register(sub: argparse._SubParsersAction) -> None:
    sub.add_parser("settings", help="list every setting with its default and current value").set_defaults(
        handler=show
    )


def show(args: argparse.Namespace, settings: Settings) -> int:
    for env, default, meaning in settings_module.describe():
        current = os.environ.get(env)
        if current and env in settings_module.URL_VARIABLES:
            current = settings_module.shown_value(env, current)  # the password masked
        elif current and env in settings_module.SECRET_VARIABLES:
            current = "(set, hidden)"
        print(f"{env}\n    default: {default if default is not None else '(unset)'}"
              f"\n    current: {current if current else '(default)'}\n    {meaning}")
    return 0
