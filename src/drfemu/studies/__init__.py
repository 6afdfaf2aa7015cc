"""policies"""
