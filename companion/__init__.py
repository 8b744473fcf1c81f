"""companion: the tested code behind *Positions in Transformers*."""
__version__ = "0.1.0"
