# Stubs for the part of cuda.pathfinder that baracuda uses.
from typing import NamedTuple

class LocatedHeaderDir(NamedTuple):
    abs_path: str
    found_via: str

def locate_nvidia_header_directory(libname: str) -> LocatedHeaderDir | None: ...
