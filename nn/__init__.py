"""The operator library and autograd layer (issues 4-6). Empty for now."""
