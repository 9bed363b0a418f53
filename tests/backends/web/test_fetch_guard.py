"""The direct fetch reaches public addresses only: loopback, private and link-local hosts are
refused (every resolved address, every redirect hop) with an observation that says why."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from wikisim.backends.web import WebBackend
from wikisim.backends.web.guard import AddressGuard
from wikisim.errors import ConfigError
from wikisim.tools.visit import VisitTool


def direct(fake, fast_config, **kw) -> WebBackend:
    return WebBackend(env=fake.env(), config=fast_config, cache_mode="off", visit=["direct"], **kw)


@pytest.mark.parametrize(
    ("url", "kind"),
    [
        ("http://127.0.0.1/", "loopback"),
        ("http://localhost:8080/admin", "loopback"),
        ("http://[::1]/", "loopback"),
        ("http://[::ffff:127.0.0.1]/", "loopback"),
        ("http://0.0.0.0/", "unspecified"),
        ("http://169.254.169.254/latest/meta-data/", "link-local"),
        ("http://[fe80::1]/", "link-local"),
        ("http://10.1.2.3/", "private"),
        ("https://192.168.0.1/", "private"),
        ("http://172.16.5.4/", "private"),
        ("http://[fd00::1]/", "private"),
        ("http://100.64.0.1/", "non-public"),
        ("http://224.0.0.1/", "multicast"),
    ],
)
def test_non_public_addresses_are_refused(url, kind):
    why = AddressGuard().refusal(url)
    assert why is not None and f"resolves to a {kind} address" in why
    assert AddressGuard(["0.0.0.0/0", "::/0"]).refusal(url) is None  # everything explicitly allowed


def test_public_addresses_pass_and_bad_allow_lists_fail_early():
    assert AddressGuard().refusal("http://93.184.215.14/page") is None
    assert AddressGuard().refusal("https://[2606:2800:21f:cb07:6820:80da:af6b:8b2c]/") is None
    assert "names no host" in AddressGuard().refusal("http:///path")
    with pytest.raises(ConfigError, match="CIDR networks"):
        AddressGuard(["not a network"])


def test_refusal_is_an_observation_and_nothing_is_fetched(fake, fast_config):
    web = direct(fake, fast_config)
    page = web.visit(f"{fake.url}/site/Snow_Valley", "climate", 80)
    assert not page.found and "refused 127.0.0.1" in page.extract and fake.calls["site"] == 0
    text = VisitTool(web, 80)(
        url=f"{fake.url}/site/Snow_Valley".replace("127.0.0.1", "localhost"), goal="climate"
    ).text
    assert (
        "could not be accessed. The direct fetch refused localhost: it resolves to a loopback address"
        in text
    )
    assert fake.calls["site"] == 0 and web.trace()[-1].outcome == "live"  # an answer, not a failure


def test_redirects_are_checked_hop_by_hop(fake, fast_config):
    web = direct(fake, fast_config, fetch_allow=["127.0.0.1/32"])
    followed = web.visit(
        f"{fake.url}/redirect?to={quote(f'{fake.url}/site/Snow_Valley')}", "climate", 80
    )
    assert followed.found and "cold and dry" in followed.extract and fake.calls["site"] == 1
    metadata = "http://169.254.169.254/latest/meta-data/"
    refused = web.visit(f"{fake.url}/redirect?to={quote(metadata)}", "credentials", 80)
    assert (
        not refused.found
        and "refused 169.254.169.254: it resolves to a link-local address" in refused.extract
    )
    assert fake.calls["redirect"] == 2
