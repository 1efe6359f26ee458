"""theorylab.algebra"""
