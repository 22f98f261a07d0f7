"""A stand-in browser for `hermes mcp login` ($BROWSER="python browser.py %s"): it opens the URL and
follows the authorization server's redirect to the login's listener, as a person's browser would."""

import sys
import urllib.request

with urllib.request.urlopen(sys.argv[1], timeout=60) as response:
    sys.exit(0 if response.status == 200 else 1)
