"""theorylab.hmm"""
