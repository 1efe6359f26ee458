"""theorylab.attention"""
