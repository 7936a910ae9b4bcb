"""The attack suite of the trust boundary (docs/security.md): each attack beside a control."""
