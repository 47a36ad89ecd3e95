"""Principals from client certificates, as Kafka's SSL listeners make them: ``User:`` + the subject's
distinguished name in RFC 2253 form (most specific part first: ``CN=alice,OU=eng,O=Example,C=US``),
rewritten by ``ssl.principal.mapping.rules``:

* ``DEFAULT``: the distinguished name unchanged;
* ``RULE:pattern/replacement/`` (optionally ``/L`` or ``/U`` to lower- or upper-case the result): when
  the whole name matches ``pattern`` (a regular expression), the principal is ``replacement`` with
  ``$1``, ``$2`` ... standing for the pattern's groups.

Rules are tried in order; when none applies, authentication fails (as in Kafka). Pure: no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tidelog.errors import ConfigError

#: Python's ``getpeercert()`` attribute names -> the short names of RFC 2253 (as Java prints them).
_SHORT_NAMES = {
    "commonName": "CN", "countryName": "C", "localityName": "L", "stateOrProvinceName": "ST",
    "organizationName": "O", "organizationalUnitName": "OU", "streetAddress": "STREET",
    "domainComponent": "DC", "userId": "UID", "emailAddress": "EMAILADDRESS",
}
_RULE = re.compile(r"\s*(DEFAULT|RULE:((?:\\/|[^/])*)/((?:\\/|[^/])*)/([LU])?)\s*(?:,|$)")


def _escape(value: str) -> str:
    out = re.sub(r'([,+"\\<>;])', r"\\\1", value)
    if out.startswith(("#", " ")):
        out = "\\" + out
    if out.endswith(" ") and not out.endswith("\\ "):
        out = out[:-1] + "\\ "
    return out


def distinguished_name(subject: tuple) -> str:
    """RFC 2253 text of a subject as ``ssl.SSLSocket.getpeercert()`` gives it (RDNs in certificate
    order; RFC 2253 writes them in reverse)."""
    rdns = []
    for rdn in reversed(subject):
        rdns.append("+".join(f"{_SHORT_NAMES.get(k, k)}={_escape(v)}" for k, v in rdn))
    return ",".join(rdns)


@dataclass(frozen=True, slots=True)
class _Rule:
    default: bool
    pattern: re.Pattern | None = None
    replacement: str = ""
    case: str | None = None

    def apply(self, dn: str) -> str | None:
        if self.default:
            return dn
        assert self.pattern is not None
        m = self.pattern.fullmatch(dn)
        if m is None:
            return None
        result = re.sub(r"\$(\d+)", lambda g: m.group(int(g.group(1))) or "", self.replacement)
        return result.lower() if self.case == "L" else result.upper() if self.case == "U" else result


class PrincipalMapper:
    """``ssl.principal.mapping.rules``, parsed. Immutable."""

    def __init__(self, rules: str = "DEFAULT") -> None:
        self.rules: list[_Rule] = []
        text, pos = rules.strip() or "DEFAULT", 0
        while pos < len(text):
            m = _RULE.match(text, pos)
            if m is None or m.end() == pos:
                raise ConfigError(f"Invalid value {rules!r} for configuration ssl.principal.mapping.rules: expected "
                                  "DEFAULT or RULE:pattern/replacement/[LU] entries separated by commas")
            if m.group(1) == "DEFAULT":
                self.rules.append(_Rule(True))
            else:
                try:
                    pattern = re.compile(m.group(2).replace("\\/", "/"))
                except re.error as e:
                    raise ConfigError(f"Invalid value {rules!r} for configuration ssl.principal.mapping.rules: "
                                      f"{e}") from None
                self.rules.append(_Rule(False, pattern, m.group(3).replace("\\/", "/"), m.group(4)))
            pos = m.end()

    def name(self, dn: str) -> str:
        """The principal name for ``dn``; ValueError when no rule applies."""
        for rule in self.rules:
            result = rule.apply(dn)
            if result is not None:
                return result
        raise ValueError(f"No rules apply to {dn}, rules {[r.pattern.pattern if r.pattern else 'DEFAULT' for r in self.rules]}")


__all__ = ["PrincipalMapper", "distinguished_name"]
