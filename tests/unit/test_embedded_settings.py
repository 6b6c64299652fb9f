"""The embedded server's settings for the machine it runs on (docs/design.md#the-embedded-servers-settings)."""

import pytest

from sms_pipeline.db.embedded import server_settings

GB = 2**30


@pytest.mark.parametrize(
    ("memory_gb", "free_disk_gb", "shared_buffers", "max_wal_size"),
    [
        (24, 74, "4096MB", "7GB"),  # a quarter of the memory, capped; a tenth of the free disk
        (8, 300, "2048MB", "8GB"),  # plenty of disk: 8 GB at most
        (2, 5, "512MB", "1GB"),  # a small machine: never below Postgres' own 1 GB of WAL
        (0.25, 0.5, "128MB", "1GB"),  # never below Postgres' own 128 MB of buffers
        (64, 19.9, "4096MB", "1GB"),  # whole GB, rounded down: 1.99 GB is 1
    ],
)
def test_buffers_and_wal_follow_memory_and_disk(memory_gb, free_disk_gb, shared_buffers, max_wal_size):
    settings = server_settings(int(memory_gb * GB), int(free_disk_gb * GB))
    assert settings == {"shared_buffers": shared_buffers, "max_wal_size": max_wal_size,
                        "wal_buffers": "64MB", "checkpoint_timeout": "15min"}
