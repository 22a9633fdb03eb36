"""The web source (http, https): its parts, each tested on its own against a real server on loopback.
Discovery through web pages is wired in by the HTTP issue; these are its building blocks."""
