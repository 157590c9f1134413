"""Test hosts: a small Ray cluster of separate network namespaces on this machine (netns_hosts.py) and
the delay line between them (delay_line.py), for the tests and benches of what losing or reaching
a host costs."""
