import enum

class nvrtcResult(enum.IntEnum):
    NVRTC_SUCCESS = 0

def nvrtcVersion() -> tuple[nvrtcResult, int, int]: ...
