"""theorylab.languages"""
