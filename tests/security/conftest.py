"""Fixtures of the adversarial suite. tests/conftest.py (start_server, backend) applies here too."""
from types import SimpleNamespace

import pytest

from security.util import (ADMIN, Api, create_branch, create_repo, create_user, s3_client, set_up_admin,
                           upload, write_config)

SECRET_X = b"the secret bytes of secret/x"
SECRET_Y = b"secret/y of the other repository"


@pytest.fixture
def catalog_server(start_server, tmp_path):
    """Starts a server on local storage with its admin set up: catalog_server(env=..., extra_toml=...)."""

    def start(env=None, extra_toml=""):
        cfg = write_config(tmp_path, extra_toml)
        server = start_server("--config", str(cfg), env=env)
        set_up_admin(server)
        server.api = Api(server)
        server.namespace = lambda name: f"local://{tmp_path}/ns-{name}"

        def restart():
            """Starts the server again on its data and port (after a crash)."""
            again = start_server("--config", str(cfg), env=env, data_dir=server.data_dir,
                                 listen=f"127.0.0.1:{server.port}")
            again.api, again.namespace, again.restart = server.api, server.namespace, restart
            return again

        server.restart = restart
        return server

    return start


def make_victim(server):
    """The set-up of the attacks: repository `lake` with secret/x, secret/y and public/a (and a branch
    dev); repository `other` with secret/y; user bob, who may list `lake` but read and write only its
    public/*; a user `nobody` without any policy."""
    api = server.api
    create_repo(api, "lake", server.namespace("lake"))
    create_repo(api, "other", server.namespace("other"))
    for path, data in [("secret/x", SECRET_X), ("secret/y", b"another secret"), ("public/a", b"public a")]:
        assert upload(api, "lake", "main", path, data).status_code == 201
    assert upload(api, "other", "main", "secret/y", SECRET_Y).status_code == 201
    create_branch(api, "lake", "dev")
    bob = create_user(api, "bob", [
        {"effect": "allow", "action": ["fs:ListObjects"], "resource": "arn:lakefs:fs:::repository/lake"},
        {"effect": "allow", "action": ["fs:ReadObject", "fs:WriteObject"],
         "resource": "arn:lakefs:fs:::repository/lake/object/public/*"},
    ])
    nobody = create_user(api, "nobody")
    return SimpleNamespace(server=server, api=api, admin=ADMIN, bob=bob, bob_api=api.as_user(bob),
                           nobody=nobody, s3=s3_client(server),
                           bob_s3=s3_client(server, *bob), nobody_s3=s3_client(server, *nobody))


@pytest.fixture
def victim(catalog_server):
    return make_victim(catalog_server())
