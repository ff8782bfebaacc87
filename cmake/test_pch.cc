// Empty: the translation unit that carries cmake/test_pch.h precompiled for every test executable.
