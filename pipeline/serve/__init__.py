"""``beamtrawl serve``: a search page and JSON API for people, over any index that serves pages.

``app`` is the web application (Starlette on uvicorn, pages rendered by Jinja2 on the server, no
JavaScript), ``people`` says who is searching (anonymous, HTTP Basic against a users file, or a
reverse proxy's header), ``documents`` hands out the documents behind file, SMB and IMAP hits after
the same access check as the search. docs/serve.md is the user's version.
"""
