"""Qt's item roles and alignments as plain ints, for item models' `data` and `headerData`.

PySide6's enums are Python enums: reading `Qt.DisplayRole` costs ~10 us and
`Qt.AlignLeft | Qt.AlignVCenter` ~45 us on the shared machine, against ~20 ns for an int.
A repaint of the operator tree calls `data` ~1,200 times with up to five such reads each,
which made it 175 ms on a big trace; these constants keep it to the formatting.
"""

from __future__ import annotations

from PySide6.QtCore import Qt

DISPLAY = int(Qt.DisplayRole.value)
USER = int(Qt.UserRole.value)
TOOLTIP = int(Qt.ToolTipRole.value)
FOREGROUND = int(Qt.ForegroundRole.value)
ALIGNMENT = int(Qt.TextAlignmentRole.value)
ALIGN_LEFT = int((Qt.AlignLeft | Qt.AlignVCenter).value)
ALIGN_RIGHT = int((Qt.AlignRight | Qt.AlignVCenter).value)
HORIZONTAL = Qt.Horizontal
