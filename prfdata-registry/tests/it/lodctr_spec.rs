//! The lodctr design specification's own lodctr example, shared by the lodctr tests.

/// devdef.h exactly as the lodctr design specification gives it.
pub const DEVDEF_H: &str = "\
// begin devdef.H file

// legal constant definitions

#define OBJECT_1 0
#define DEVICE_COUNTER_1 2
#define DEVICE_COUNTER_2 4


// end devdef.H file
";

/// The .INI example exactly as the lodctr design specification gives it.
pub const DEVICE_INI: &str = "\
// begin .INI file example
[info]
drivername=DriverName
symbolfile=devdef.h

[languages]
009=English
00C=OtherLanguage

[text]
OBJECT_1_009_NAME=Device Name
OBJECT_1_009_HELP=Displays performance statistics on Device Name
OBJECT_1_00C_NAME=Device Name in other language
OBJECT_1_00C_HELP=Displays performance of Device Name in other language

DEVICE_COUNTER_1_009_NAME=Counter A
DEVICE_COUNTER_1_009_HELP=Displays the current value of Counter A
DEVICE_COUNTER_1_00C_NAME=Counter A in other language
DEVICE_COUNTER_1_00C_HELP=Displays the value of Counter A in other language

DEVICE_COUNTER_2_009_NAME=Counter B
DEVICE_COUNTER_2_009_HELP=Displays the current rate of Devices B
DEVICE_COUNTER_2_00C_NAME=Counter B in other language
DEVICE_COUNTER_2_00C_HELP=Displays the rate of Device B in other language

// end .INI file
";
