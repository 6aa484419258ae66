"""A clock the code under test reads and sleeps on: time passes only when it sleeps (no real waiting)."""


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds
