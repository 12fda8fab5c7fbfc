"""Test doubles that speak real protocols on loopback."""
