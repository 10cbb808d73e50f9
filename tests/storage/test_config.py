"""`StorageConfig.from_env`: every accepted form of STALWART_STORAGE, and errors that say what to write instead."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from temporalio.contrib.aws.s3driver import S3StorageDriver
from temporalio.converter import DataConverter

from stalwart.activities.storage import (
    DEFAULT_THRESHOLD_BYTES,
    DRIVER_NAME,
    LazyS3ObjectClient,
    LocalObjectClient,
    PrefixedObjectClient,
    StorageConfig,
    external_storage,
    object_client,
    storage_driver,
    with_external_storage,
)
from stalwart.contracts.converter import DATA_CONVERTER


def test_unset_storage_is_the_users_data_folder_whatever_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    roots = set()
    for folder in ("a", "b"):  # `stalwart dev` in one folder, `stalwart run` or `show` in another
        (tmp_path / folder).mkdir()
        monkeypatch.chdir(tmp_path / folder)
        roots.add(StorageConfig.from_env({}).local_root)
    assert roots == {(tmp_path / "home" / ".local" / "share" / "stalwart" / "storage").resolve()}
    config = StorageConfig.from_env({})
    assert config.bucket == "payloads"
    assert config.threshold_bytes == DEFAULT_THRESHOLD_BYTES == 256 * 1024


def test_unset_storage_follows_an_absolute_xdg_data_home_and_ignores_a_relative_one(tmp_path: Path):
    assert StorageConfig.from_env({"XDG_DATA_HOME": str(tmp_path)}).local_root == tmp_path / "stalwart" / "storage"
    assert StorageConfig.from_env({"XDG_DATA_HOME": "data"}).local_root == StorageConfig.from_env({}).local_root


def test_empty_storage_is_the_default_local_directory(tmp_path: Path):
    environ = {"XDG_DATA_HOME": str(tmp_path), "STALWART_STORAGE": "  "}
    assert StorageConfig.from_env(environ).local_root == tmp_path / "stalwart" / "storage"


def test_payloads_left_in_the_old_default_folder_are_pointed_out_with_the_setting_that_reads_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".stalwart" / "storage" / "payloads").mkdir(parents=True)
    StorageConfig.from_env({"XDG_DATA_HOME": str(tmp_path / "data")})
    assert f"STALWART_STORAGE={(tmp_path / '.stalwart' / 'storage').resolve()}" in caplog.text


def test_the_old_default_folder_is_pointed_out_once_however_often_the_process_reads_the_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".stalwart" / "storage" / "payloads").mkdir(parents=True)
    for _ in range(3):  # a worker reads it for its converter, its transcript store and its activities
        StorageConfig.from_env({"XDG_DATA_HOME": str(tmp_path / "data")})
    assert caplog.text.count("holds payloads stored by an older Stalwart") == 1


def test_a_relative_path_is_a_local_directory_resolved_against_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.chdir(tmp_path)
    assert StorageConfig.from_env({"STALWART_STORAGE": "data/big"}).local_root == (tmp_path / "data/big").resolve()
    assert StorageConfig.from_env({"STALWART_STORAGE": "runs:archive"}).local_root == (tmp_path / "runs:archive")


def test_an_absolute_path_is_a_local_directory(tmp_path: Path):
    assert StorageConfig.from_env({"STALWART_STORAGE": str(tmp_path)}).local_root == tmp_path.resolve()


def test_a_file_url_is_a_local_directory(tmp_path: Path):
    config = StorageConfig.from_env({"STALWART_STORAGE": f"file://{tmp_path}/with%20space"})
    assert config.local_root == tmp_path.resolve() / "with space"
    assert StorageConfig.from_env({"STALWART_STORAGE": f"file://localhost{tmp_path}"}).local_root == tmp_path.resolve()


def test_an_s3_url_is_a_bucket_with_an_optional_prefix_endpoint_and_region():
    config = StorageConfig.from_env({"STALWART_STORAGE": "s3://my-bucket"})
    assert (config.s3_bucket, config.s3_prefix, config.s3_endpoint_url, config.local_root) == (
        "my-bucket",
        "",
        None,
        None,
    )

    config = StorageConfig.from_env(
        {
            "STALWART_STORAGE": "s3://my-bucket/team/stalwart/",
            "STALWART_S3_ENDPOINT_URL": "http://localhost:9000",
            "AWS_DEFAULT_REGION": "eu-west-1",
        }
    )
    assert config.bucket == "my-bucket"
    assert config.s3_prefix == "team/stalwart"
    assert config.s3_endpoint_url == "http://localhost:9000"
    assert config.s3_region == "eu-west-1"
    assert config.describe() == "s3://my-bucket/team/stalwart at http://localhost:9000"


def test_the_threshold_is_read_in_bytes():
    assert StorageConfig.from_env({"STALWART_STORAGE_THRESHOLD_BYTES": "1024"}).threshold_bytes == 1024
    assert StorageConfig.from_env({"STALWART_STORAGE_THRESHOLD_BYTES": "0"}).threshold_bytes == 0


@pytest.mark.parametrize("value", ["gs://bucket", "https://example.com/store", "s3:bucket", "file:relative"])
def test_an_unknown_storage_form_is_refused_with_the_accepted_forms(value: str):
    with pytest.raises(ValueError) as raised:
        StorageConfig.from_env({"STALWART_STORAGE": value})
    message = str(raised.value)
    assert value in message
    assert "file:///absolute/path" in message and "s3://bucket[/prefix]" in message and "directory path" in message


@pytest.mark.parametrize(
    ("env", "fix"),
    [
        ({"STALWART_STORAGE": "s3://"}, "s3://bucket[/prefix]"),
        ({"STALWART_STORAGE": "s3://Bad_Bucket"}, "lowercase letters"),
        ({"STALWART_STORAGE": "file://host/path"}, "file:///absolute/path"),
        ({"STALWART_STORAGE": "s3://b-1", "STALWART_S3_ENDPOINT_URL": "localhost:9000"}, "http://localhost:9000"),
        ({"STALWART_STORAGE_THRESHOLD_BYTES": "256KiB"}, "whole number of bytes"),
        ({"STALWART_STORAGE_THRESHOLD_BYTES": "-1"}, "whole number of bytes"),
    ],
)
def test_a_malformed_setting_is_refused_naming_the_fix(env: dict[str, str], fix: str):
    with pytest.raises(ValueError, match=re.escape(fix)):
        StorageConfig.from_env(env)


def test_local_storage_uses_the_sdk_s3_driver_over_files(tmp_path: Path):
    config = StorageConfig(local_root=tmp_path, threshold_bytes=1000)
    assert isinstance(object_client(config), LocalObjectClient)
    driver = storage_driver(config)
    assert isinstance(driver, S3StorageDriver) and driver.name() == DRIVER_NAME == "stalwart.storage"
    storage = external_storage(config)
    assert storage.payload_size_threshold == 1000

    converter = with_external_storage(DATA_CONVERTER, config)
    assert converter.external_storage is not None
    assert converter.payload_converter_class is DATA_CONVERTER.payload_converter_class
    assert DATA_CONVERTER.external_storage is None, "the shared converter itself is left unchanged"


def test_s3_storage_opens_no_connection_until_used_and_prefixes_keys():
    config = StorageConfig(s3_bucket="my-bucket", s3_prefix="team")
    client = object_client(config)
    assert isinstance(client, PrefixedObjectClient) and isinstance(client.inner, LazyS3ObjectClient)
    assert isinstance(object_client(StorageConfig(s3_bucket="my-bucket")), LazyS3ObjectClient)


def test_with_external_storage_reads_the_environment_when_given_no_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("STALWART_STORAGE", str(tmp_path))
    monkeypatch.setenv("STALWART_STORAGE_THRESHOLD_BYTES", "4096")
    converter = with_external_storage(DataConverter.default)
    assert converter.external_storage is not None
    assert converter.external_storage.payload_size_threshold == 4096
