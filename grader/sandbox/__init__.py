"""Running untrusted student code: the probe driver and the warm worker run inside the sandbox;
`pool` is the trusted side that starts workers and reads their results safely."""
