"""The papers' reported numbers, transcribed once, one file per paper. Never computed, never edited to fit."""
