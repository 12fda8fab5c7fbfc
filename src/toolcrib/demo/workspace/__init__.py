"""The demo workspace folder (a package only so its database builder can be imported)."""
