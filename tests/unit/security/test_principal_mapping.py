"""Certificate subjects -> principals, as Kafka's ssl.principal.mapping.rules."""

from __future__ import annotations

import pytest

from tidelog.errors import ConfigError
from tidelog.security.principal_mapping import PrincipalMapper, distinguished_name

SUBJECT = ((("countryName", "US"),), (("organizationName", "Example, Inc"),), (("organizationalUnitName", "eng"),),
           (("commonName", "alice"),))


def test_distinguished_name_is_rfc2253_most_specific_first_and_escaped():
    assert distinguished_name(SUBJECT) == "CN=alice,OU=eng,O=Example\\, Inc,C=US"


def test_default_keeps_the_whole_name():
    assert PrincipalMapper("DEFAULT").name("CN=alice,OU=eng") == "CN=alice,OU=eng"


def test_rules_apply_in_order_with_groups_and_case():
    mapper = PrincipalMapper(r"RULE:^CN=(.*?),OU=(.*?),.*$/$1@$2/U,RULE:^CN=([^,]*)$/$1/L,DEFAULT")
    assert mapper.name("CN=alice,OU=eng,O=x") == "ALICE@ENG"
    assert mapper.name("CN=Bob") == "bob"
    assert mapper.name("O=only") == "O=only"


def test_no_rule_applying_is_an_error():
    with pytest.raises(ValueError, match="No rules apply"):
        PrincipalMapper(r"RULE:^CN=(.*)$/$1/").name("O=x")


@pytest.mark.parametrize("rules", ["RULE:(/x/", "SOMETHING", "RULE:a/b"])
def test_bad_rules_are_config_errors(rules):
    with pytest.raises(ConfigError, match="ssl.principal.mapping.rules"):
        PrincipalMapper(rules)
