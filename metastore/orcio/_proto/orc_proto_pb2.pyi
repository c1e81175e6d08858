from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class EncryptionAlgorithm(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    UNKNOWN_ENCRYPTION: _ClassVar[EncryptionAlgorithm]
    AES_CTR_128: _ClassVar[EncryptionAlgorithm]
    AES_CTR_256: _ClassVar[EncryptionAlgorithm]

class KeyProviderKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    UNKNOWN: _ClassVar[KeyProviderKind]
    HADOOP: _ClassVar[KeyProviderKind]
    AWS: _ClassVar[KeyProviderKind]
    GCP: _ClassVar[KeyProviderKind]
    AZURE: _ClassVar[KeyProviderKind]

class CalendarKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    UNKNOWN_CALENDAR: _ClassVar[CalendarKind]
    JULIAN_GREGORIAN: _ClassVar[CalendarKind]
    PROLEPTIC_GREGORIAN: _ClassVar[CalendarKind]

class CompressionKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    NONE: _ClassVar[CompressionKind]
    ZLIB: _ClassVar[CompressionKind]
    SNAPPY: _ClassVar[CompressionKind]
    LZO: _ClassVar[CompressionKind]
    LZ4: _ClassVar[CompressionKind]
    ZSTD: _ClassVar[CompressionKind]
    BROTLI: _ClassVar[CompressionKind]
UNKNOWN_ENCRYPTION: EncryptionAlgorithm
AES_CTR_128: EncryptionAlgorithm
AES_CTR_256: EncryptionAlgorithm
UNKNOWN: KeyProviderKind
HADOOP: KeyProviderKind
AWS: KeyProviderKind
GCP: KeyProviderKind
AZURE: KeyProviderKind
UNKNOWN_CALENDAR: CalendarKind
JULIAN_GREGORIAN: CalendarKind
PROLEPTIC_GREGORIAN: CalendarKind
NONE: CompressionKind
ZLIB: CompressionKind
SNAPPY: CompressionKind
LZO: CompressionKind
LZ4: CompressionKind
ZSTD: CompressionKind
BROTLI: CompressionKind

class IntegerStatistics(_message.Message):
    __slots__ = ("minimum", "maximum", "sum")
    MINIMUM_FIELD_NUMBER: _ClassVar[int]
    MAXIMUM_FIELD_NUMBER: _ClassVar[int]
    SUM_FIELD_NUMBER: _ClassVar[int]
    minimum: int
    maximum: int
    sum: int
    def __init__(self, minimum: _Optional[int] = ..., maximum: _Optional[int] = ..., sum: _Optional[int] = ...) -> None: ...

class DoubleStatistics(_message.Message):
    __slots__ = ("minimum", "maximum", "sum")
    MINIMUM_FIELD_NUMBER: _ClassVar[int]
    MAXIMUM_FIELD_NUMBER: _ClassVar[int]
    SUM_FIELD_NUMBER: _ClassVar[int]
    minimum: float
    maximum: float
    sum: float
    def __init__(self, minimum: _Optional[float] = ..., maximum: _Optional[float] = ..., sum: _Optional[float] = ...) -> None: ...

class StringStatistics(_message.Message):
    __slots__ = ("minimum", "maximum", "sum", "lower_bound", "upper_bound")
    MINIMUM_FIELD_NUMBER: _ClassVar[int]
    MAXIMUM_FIELD_NUMBER: _ClassVar[int]
    SUM_FIELD_NUMBER: _ClassVar[int]
    LOWER_BOUND_FIELD_NUMBER: _ClassVar[int]
    UPPER_BOUND_FIELD_NUMBER: _ClassVar[int]
    minimum: str
    maximum: str
    sum: int
    lower_bound: str
    upper_bound: str
    def __init__(self, minimum: _Optional[str] = ..., maximum: _Optional[str] = ..., sum: _Optional[int] = ..., lower_bound: _Optional[str] = ..., upper_bound: _Optional[str] = ...) -> None: ...

class BucketStatistics(_message.Message):
    __slots__ = ("count",)
    COUNT_FIELD_NUMBER: _ClassVar[int]
    count: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, count: _Optional[_Iterable[int]] = ...) -> None: ...

class DecimalStatistics(_message.Message):
    __slots__ = ("minimum", "maximum", "sum")
    MINIMUM_FIELD_NUMBER: _ClassVar[int]
    MAXIMUM_FIELD_NUMBER: _ClassVar[int]
    SUM_FIELD_NUMBER: _ClassVar[int]
    minimum: str
    maximum: str
    sum: str
    def __init__(self, minimum: _Optional[str] = ..., maximum: _Optional[str] = ..., sum: _Optional[str] = ...) -> None: ...

class DateStatistics(_message.Message):
    __slots__ = ("minimum", "maximum")
    MINIMUM_FIELD_NUMBER: _ClassVar[int]
    MAXIMUM_FIELD_NUMBER: _ClassVar[int]
    minimum: int
    maximum: int
    def __init__(self, minimum: _Optional[int] = ..., maximum: _Optional[int] = ...) -> None: ...

class TimestampStatistics(_message.Message):
    __slots__ = ("minimum", "maximum", "minimum_utc", "maximum_utc", "minimum_nanos", "maximum_nanos")
    MINIMUM_FIELD_NUMBER: _ClassVar[int]
    MAXIMUM_FIELD_NUMBER: _ClassVar[int]
    MINIMUM_UTC_FIELD_NUMBER: _ClassVar[int]
    MAXIMUM_UTC_FIELD_NUMBER: _ClassVar[int]
    MINIMUM_NANOS_FIELD_NUMBER: _ClassVar[int]
    MAXIMUM_NANOS_FIELD_NUMBER: _ClassVar[int]
    minimum: int
    maximum: int
    minimum_utc: int
    maximum_utc: int
    minimum_nanos: int
    maximum_nanos: int
    def __init__(self, minimum: _Optional[int] = ..., maximum: _Optional[int] = ..., minimum_utc: _Optional[int] = ..., maximum_utc: _Optional[int] = ..., minimum_nanos: _Optional[int] = ..., maximum_nanos: _Optional[int] = ...) -> None: ...

class BinaryStatistics(_message.Message):
    __slots__ = ("sum",)
    SUM_FIELD_NUMBER: _ClassVar[int]
    sum: int
    def __init__(self, sum: _Optional[int] = ...) -> None: ...

class CollectionStatistics(_message.Message):
    __slots__ = ("min_children", "max_children", "total_children")
    MIN_CHILDREN_FIELD_NUMBER: _ClassVar[int]
    MAX_CHILDREN_FIELD_NUMBER: _ClassVar[int]
    TOTAL_CHILDREN_FIELD_NUMBER: _ClassVar[int]
    min_children: int
    max_children: int
    total_children: int
    def __init__(self, min_children: _Optional[int] = ..., max_children: _Optional[int] = ..., total_children: _Optional[int] = ...) -> None: ...

class BoundingBox(_message.Message):
    __slots__ = ("xmin", "xmax", "ymin", "ymax", "zmin", "zmax", "mmin", "mmax")
    XMIN_FIELD_NUMBER: _ClassVar[int]
    XMAX_FIELD_NUMBER: _ClassVar[int]
    YMIN_FIELD_NUMBER: _ClassVar[int]
    YMAX_FIELD_NUMBER: _ClassVar[int]
    ZMIN_FIELD_NUMBER: _ClassVar[int]
    ZMAX_FIELD_NUMBER: _ClassVar[int]
    MMIN_FIELD_NUMBER: _ClassVar[int]
    MMAX_FIELD_NUMBER: _ClassVar[int]
    xmin: float
    xmax: float
    ymin: float
    ymax: float
    zmin: float
    zmax: float
    mmin: float
    mmax: float
    def __init__(self, xmin: _Optional[float] = ..., xmax: _Optional[float] = ..., ymin: _Optional[float] = ..., ymax: _Optional[float] = ..., zmin: _Optional[float] = ..., zmax: _Optional[float] = ..., mmin: _Optional[float] = ..., mmax: _Optional[float] = ...) -> None: ...

class GeospatialStatistics(_message.Message):
    __slots__ = ("bbox", "geospatial_types")
    BBOX_FIELD_NUMBER: _ClassVar[int]
    GEOSPATIAL_TYPES_FIELD_NUMBER: _ClassVar[int]
    bbox: BoundingBox
    geospatial_types: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, bbox: _Optional[_Union[BoundingBox, _Mapping]] = ..., geospatial_types: _Optional[_Iterable[int]] = ...) -> None: ...

class ColumnStatistics(_message.Message):
    __slots__ = ("number_of_values", "int_statistics", "double_statistics", "string_statistics", "bucket_statistics", "decimal_statistics", "date_statistics", "binary_statistics", "timestamp_statistics", "has_null", "bytes_on_disk", "collection_statistics", "geospatial_statistics")
    NUMBER_OF_VALUES_FIELD_NUMBER: _ClassVar[int]
    INT_STATISTICS_FIELD_NUMBER: _ClassVar[int]
    DOUBLE_STATISTICS_FIELD_NUMBER: _ClassVar[int]
    STRING_STATISTICS_FIELD_NUMBER: _ClassVar[int]
    BUCKET_STATISTICS_FIELD_NUMBER: _ClassVar[int]
    DECIMAL_STATISTICS_FIELD_NUMBER: _ClassVar[int]
    DATE_STATISTICS_FIELD_NUMBER: _ClassVar[int]
    BINARY_STATISTICS_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_STATISTICS_FIELD_NUMBER: _ClassVar[int]
    HAS_NULL_FIELD_NUMBER: _ClassVar[int]
    BYTES_ON_DISK_FIELD_NUMBER: _ClassVar[int]
    COLLECTION_STATISTICS_FIELD_NUMBER: _ClassVar[int]
    GEOSPATIAL_STATISTICS_FIELD_NUMBER: _ClassVar[int]
    number_of_values: int
    int_statistics: IntegerStatistics
    double_statistics: DoubleStatistics
    string_statistics: StringStatistics
    bucket_statistics: BucketStatistics
    decimal_statistics: DecimalStatistics
    date_statistics: DateStatistics
    binary_statistics: BinaryStatistics
    timestamp_statistics: TimestampStatistics
    has_null: bool
    bytes_on_disk: int
    collection_statistics: CollectionStatistics
    geospatial_statistics: GeospatialStatistics
    def __init__(self, number_of_values: _Optional[int] = ..., int_statistics: _Optional[_Union[IntegerStatistics, _Mapping]] = ..., double_statistics: _Optional[_Union[DoubleStatistics, _Mapping]] = ..., string_statistics: _Optional[_Union[StringStatistics, _Mapping]] = ..., bucket_statistics: _Optional[_Union[BucketStatistics, _Mapping]] = ..., decimal_statistics: _Optional[_Union[DecimalStatistics, _Mapping]] = ..., date_statistics: _Optional[_Union[DateStatistics, _Mapping]] = ..., binary_statistics: _Optional[_Union[BinaryStatistics, _Mapping]] = ..., timestamp_statistics: _Optional[_Union[TimestampStatistics, _Mapping]] = ..., has_null: _Optional[bool] = ..., bytes_on_disk: _Optional[int] = ..., collection_statistics: _Optional[_Union[CollectionStatistics, _Mapping]] = ..., geospatial_statistics: _Optional[_Union[GeospatialStatistics, _Mapping]] = ...) -> None: ...

class RowIndexEntry(_message.Message):
    __slots__ = ("positions", "statistics")
    POSITIONS_FIELD_NUMBER: _ClassVar[int]
    STATISTICS_FIELD_NUMBER: _ClassVar[int]
    positions: _containers.RepeatedScalarFieldContainer[int]
    statistics: ColumnStatistics
    def __init__(self, positions: _Optional[_Iterable[int]] = ..., statistics: _Optional[_Union[ColumnStatistics, _Mapping]] = ...) -> None: ...

class RowIndex(_message.Message):
    __slots__ = ("entry",)
    ENTRY_FIELD_NUMBER: _ClassVar[int]
    entry: _containers.RepeatedCompositeFieldContainer[RowIndexEntry]
    def __init__(self, entry: _Optional[_Iterable[_Union[RowIndexEntry, _Mapping]]] = ...) -> None: ...

class BloomFilter(_message.Message):
    __slots__ = ("num_hash_functions", "bitset", "utf8bitset")
    NUM_HASH_FUNCTIONS_FIELD_NUMBER: _ClassVar[int]
    BITSET_FIELD_NUMBER: _ClassVar[int]
    UTF8BITSET_FIELD_NUMBER: _ClassVar[int]
    num_hash_functions: int
    bitset: _containers.RepeatedScalarFieldContainer[int]
    utf8bitset: bytes
    def __init__(self, num_hash_functions: _Optional[int] = ..., bitset: _Optional[_Iterable[int]] = ..., utf8bitset: _Optional[bytes] = ...) -> None: ...

class BloomFilterIndex(_message.Message):
    __slots__ = ("bloom_filter",)
    BLOOM_FILTER_FIELD_NUMBER: _ClassVar[int]
    bloom_filter: _containers.RepeatedCompositeFieldContainer[BloomFilter]
    def __init__(self, bloom_filter: _Optional[_Iterable[_Union[BloomFilter, _Mapping]]] = ...) -> None: ...

class Stream(_message.Message):
    __slots__ = ("kind", "column", "length")
    class Kind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        PRESENT: _ClassVar[Stream.Kind]
        DATA: _ClassVar[Stream.Kind]
        LENGTH: _ClassVar[Stream.Kind]
        DICTIONARY_DATA: _ClassVar[Stream.Kind]
        DICTIONARY_COUNT: _ClassVar[Stream.Kind]
        SECONDARY: _ClassVar[Stream.Kind]
        ROW_INDEX: _ClassVar[Stream.Kind]
        BLOOM_FILTER: _ClassVar[Stream.Kind]
        BLOOM_FILTER_UTF8: _ClassVar[Stream.Kind]
        ENCRYPTED_INDEX: _ClassVar[Stream.Kind]
        ENCRYPTED_DATA: _ClassVar[Stream.Kind]
        STRIPE_STATISTICS: _ClassVar[Stream.Kind]
        FILE_STATISTICS: _ClassVar[Stream.Kind]
    PRESENT: Stream.Kind
    DATA: Stream.Kind
    LENGTH: Stream.Kind
    DICTIONARY_DATA: Stream.Kind
    DICTIONARY_COUNT: Stream.Kind
    SECONDARY: Stream.Kind
    ROW_INDEX: Stream.Kind
    BLOOM_FILTER: Stream.Kind
    BLOOM_FILTER_UTF8: Stream.Kind
    ENCRYPTED_INDEX: Stream.Kind
    ENCRYPTED_DATA: Stream.Kind
    STRIPE_STATISTICS: Stream.Kind
    FILE_STATISTICS: Stream.Kind
    KIND_FIELD_NUMBER: _ClassVar[int]
    COLUMN_FIELD_NUMBER: _ClassVar[int]
    LENGTH_FIELD_NUMBER: _ClassVar[int]
    kind: Stream.Kind
    column: int
    length: int
    def __init__(self, kind: _Optional[_Union[Stream.Kind, str]] = ..., column: _Optional[int] = ..., length: _Optional[int] = ...) -> None: ...

class ColumnEncoding(_message.Message):
    __slots__ = ("kind", "dictionary_size", "bloom_encoding")
    class Kind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        DIRECT: _ClassVar[ColumnEncoding.Kind]
        DICTIONARY: _ClassVar[ColumnEncoding.Kind]
        DIRECT_V2: _ClassVar[ColumnEncoding.Kind]
        DICTIONARY_V2: _ClassVar[ColumnEncoding.Kind]
    DIRECT: ColumnEncoding.Kind
    DICTIONARY: ColumnEncoding.Kind
    DIRECT_V2: ColumnEncoding.Kind
    DICTIONARY_V2: ColumnEncoding.Kind
    KIND_FIELD_NUMBER: _ClassVar[int]
    DICTIONARY_SIZE_FIELD_NUMBER: _ClassVar[int]
    BLOOM_ENCODING_FIELD_NUMBER: _ClassVar[int]
    kind: ColumnEncoding.Kind
    dictionary_size: int
    bloom_encoding: int
    def __init__(self, kind: _Optional[_Union[ColumnEncoding.Kind, str]] = ..., dictionary_size: _Optional[int] = ..., bloom_encoding: _Optional[int] = ...) -> None: ...

class StripeEncryptionVariant(_message.Message):
    __slots__ = ("streams", "encoding")
    STREAMS_FIELD_NUMBER: _ClassVar[int]
    ENCODING_FIELD_NUMBER: _ClassVar[int]
    streams: _containers.RepeatedCompositeFieldContainer[Stream]
    encoding: _containers.RepeatedCompositeFieldContainer[ColumnEncoding]
    def __init__(self, streams: _Optional[_Iterable[_Union[Stream, _Mapping]]] = ..., encoding: _Optional[_Iterable[_Union[ColumnEncoding, _Mapping]]] = ...) -> None: ...

class StripeFooter(_message.Message):
    __slots__ = ("streams", "columns", "writer_timezone", "encryption")
    STREAMS_FIELD_NUMBER: _ClassVar[int]
    COLUMNS_FIELD_NUMBER: _ClassVar[int]
    WRITER_TIMEZONE_FIELD_NUMBER: _ClassVar[int]
    ENCRYPTION_FIELD_NUMBER: _ClassVar[int]
    streams: _containers.RepeatedCompositeFieldContainer[Stream]
    columns: _containers.RepeatedCompositeFieldContainer[ColumnEncoding]
    writer_timezone: str
    encryption: _containers.RepeatedCompositeFieldContainer[StripeEncryptionVariant]
    def __init__(self, streams: _Optional[_Iterable[_Union[Stream, _Mapping]]] = ..., columns: _Optional[_Iterable[_Union[ColumnEncoding, _Mapping]]] = ..., writer_timezone: _Optional[str] = ..., encryption: _Optional[_Iterable[_Union[StripeEncryptionVariant, _Mapping]]] = ...) -> None: ...

class StringPair(_message.Message):
    __slots__ = ("key", "value")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    key: str
    value: str
    def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...

class Type(_message.Message):
    __slots__ = ("kind", "subtypes", "field_names", "maximum_length", "precision", "scale", "attributes", "crs", "algorithm")
    class Kind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        BOOLEAN: _ClassVar[Type.Kind]
        BYTE: _ClassVar[Type.Kind]
        SHORT: _ClassVar[Type.Kind]
        INT: _ClassVar[Type.Kind]
        LONG: _ClassVar[Type.Kind]
        FLOAT: _ClassVar[Type.Kind]
        DOUBLE: _ClassVar[Type.Kind]
        STRING: _ClassVar[Type.Kind]
        BINARY: _ClassVar[Type.Kind]
        TIMESTAMP: _ClassVar[Type.Kind]
        LIST: _ClassVar[Type.Kind]
        MAP: _ClassVar[Type.Kind]
        STRUCT: _ClassVar[Type.Kind]
        UNION: _ClassVar[Type.Kind]
        DECIMAL: _ClassVar[Type.Kind]
        DATE: _ClassVar[Type.Kind]
        VARCHAR: _ClassVar[Type.Kind]
        CHAR: _ClassVar[Type.Kind]
        TIMESTAMP_INSTANT: _ClassVar[Type.Kind]
        GEOMETRY: _ClassVar[Type.Kind]
        GEOGRAPHY: _ClassVar[Type.Kind]
    BOOLEAN: Type.Kind
    BYTE: Type.Kind
    SHORT: Type.Kind
    INT: Type.Kind
    LONG: Type.Kind
    FLOAT: Type.Kind
    DOUBLE: Type.Kind
    STRING: Type.Kind
    BINARY: Type.Kind
    TIMESTAMP: Type.Kind
    LIST: Type.Kind
    MAP: Type.Kind
    STRUCT: Type.Kind
    UNION: Type.Kind
    DECIMAL: Type.Kind
    DATE: Type.Kind
    VARCHAR: Type.Kind
    CHAR: Type.Kind
    TIMESTAMP_INSTANT: Type.Kind
    GEOMETRY: Type.Kind
    GEOGRAPHY: Type.Kind
    class EdgeInterpolationAlgorithm(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        SPHERICAL: _ClassVar[Type.EdgeInterpolationAlgorithm]
        VINCENTY: _ClassVar[Type.EdgeInterpolationAlgorithm]
        THOMAS: _ClassVar[Type.EdgeInterpolationAlgorithm]
        ANDOYER: _ClassVar[Type.EdgeInterpolationAlgorithm]
        KARNEY: _ClassVar[Type.EdgeInterpolationAlgorithm]
    SPHERICAL: Type.EdgeInterpolationAlgorithm
    VINCENTY: Type.EdgeInterpolationAlgorithm
    THOMAS: Type.EdgeInterpolationAlgorithm
    ANDOYER: Type.EdgeInterpolationAlgorithm
    KARNEY: Type.EdgeInterpolationAlgorithm
    KIND_FIELD_NUMBER: _ClassVar[int]
    SUBTYPES_FIELD_NUMBER: _ClassVar[int]
    FIELD_NAMES_FIELD_NUMBER: _ClassVar[int]
    MAXIMUM_LENGTH_FIELD_NUMBER: _ClassVar[int]
    PRECISION_FIELD_NUMBER: _ClassVar[int]
    SCALE_FIELD_NUMBER: _ClassVar[int]
    ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    CRS_FIELD_NUMBER: _ClassVar[int]
    ALGORITHM_FIELD_NUMBER: _ClassVar[int]
    kind: Type.Kind
    subtypes: _containers.RepeatedScalarFieldContainer[int]
    field_names: _containers.RepeatedScalarFieldContainer[str]
    maximum_length: int
    precision: int
    scale: int
    attributes: _containers.RepeatedCompositeFieldContainer[StringPair]
    crs: str
    algorithm: Type.EdgeInterpolationAlgorithm
    def __init__(self, kind: _Optional[_Union[Type.Kind, str]] = ..., subtypes: _Optional[_Iterable[int]] = ..., field_names: _Optional[_Iterable[str]] = ..., maximum_length: _Optional[int] = ..., precision: _Optional[int] = ..., scale: _Optional[int] = ..., attributes: _Optional[_Iterable[_Union[StringPair, _Mapping]]] = ..., crs: _Optional[str] = ..., algorithm: _Optional[_Union[Type.EdgeInterpolationAlgorithm, str]] = ...) -> None: ...

class StripeInformation(_message.Message):
    __slots__ = ("offset", "index_length", "data_length", "footer_length", "number_of_rows", "encrypt_stripe_id", "encrypted_local_keys")
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    INDEX_LENGTH_FIELD_NUMBER: _ClassVar[int]
    DATA_LENGTH_FIELD_NUMBER: _ClassVar[int]
    FOOTER_LENGTH_FIELD_NUMBER: _ClassVar[int]
    NUMBER_OF_ROWS_FIELD_NUMBER: _ClassVar[int]
    ENCRYPT_STRIPE_ID_FIELD_NUMBER: _ClassVar[int]
    ENCRYPTED_LOCAL_KEYS_FIELD_NUMBER: _ClassVar[int]
    offset: int
    index_length: int
    data_length: int
    footer_length: int
    number_of_rows: int
    encrypt_stripe_id: int
    encrypted_local_keys: _containers.RepeatedScalarFieldContainer[bytes]
    def __init__(self, offset: _Optional[int] = ..., index_length: _Optional[int] = ..., data_length: _Optional[int] = ..., footer_length: _Optional[int] = ..., number_of_rows: _Optional[int] = ..., encrypt_stripe_id: _Optional[int] = ..., encrypted_local_keys: _Optional[_Iterable[bytes]] = ...) -> None: ...

class UserMetadataItem(_message.Message):
    __slots__ = ("name", "value")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    name: str
    value: bytes
    def __init__(self, name: _Optional[str] = ..., value: _Optional[bytes] = ...) -> None: ...

class StripeStatistics(_message.Message):
    __slots__ = ("col_stats",)
    COL_STATS_FIELD_NUMBER: _ClassVar[int]
    col_stats: _containers.RepeatedCompositeFieldContainer[ColumnStatistics]
    def __init__(self, col_stats: _Optional[_Iterable[_Union[ColumnStatistics, _Mapping]]] = ...) -> None: ...

class Metadata(_message.Message):
    __slots__ = ("stripe_stats",)
    STRIPE_STATS_FIELD_NUMBER: _ClassVar[int]
    stripe_stats: _containers.RepeatedCompositeFieldContainer[StripeStatistics]
    def __init__(self, stripe_stats: _Optional[_Iterable[_Union[StripeStatistics, _Mapping]]] = ...) -> None: ...

class ColumnarStripeStatistics(_message.Message):
    __slots__ = ("col_stats",)
    COL_STATS_FIELD_NUMBER: _ClassVar[int]
    col_stats: _containers.RepeatedCompositeFieldContainer[ColumnStatistics]
    def __init__(self, col_stats: _Optional[_Iterable[_Union[ColumnStatistics, _Mapping]]] = ...) -> None: ...

class FileStatistics(_message.Message):
    __slots__ = ("column",)
    COLUMN_FIELD_NUMBER: _ClassVar[int]
    column: _containers.RepeatedCompositeFieldContainer[ColumnStatistics]
    def __init__(self, column: _Optional[_Iterable[_Union[ColumnStatistics, _Mapping]]] = ...) -> None: ...

class DataMask(_message.Message):
    __slots__ = ("name", "mask_parameters", "columns")
    NAME_FIELD_NUMBER: _ClassVar[int]
    MASK_PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    COLUMNS_FIELD_NUMBER: _ClassVar[int]
    name: str
    mask_parameters: _containers.RepeatedScalarFieldContainer[str]
    columns: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, name: _Optional[str] = ..., mask_parameters: _Optional[_Iterable[str]] = ..., columns: _Optional[_Iterable[int]] = ...) -> None: ...

class EncryptionKey(_message.Message):
    __slots__ = ("key_name", "key_version", "algorithm")
    KEY_NAME_FIELD_NUMBER: _ClassVar[int]
    KEY_VERSION_FIELD_NUMBER: _ClassVar[int]
    ALGORITHM_FIELD_NUMBER: _ClassVar[int]
    key_name: str
    key_version: int
    algorithm: EncryptionAlgorithm
    def __init__(self, key_name: _Optional[str] = ..., key_version: _Optional[int] = ..., algorithm: _Optional[_Union[EncryptionAlgorithm, str]] = ...) -> None: ...

class EncryptionVariant(_message.Message):
    __slots__ = ("root", "key", "encrypted_key", "stripe_statistics", "file_statistics")
    ROOT_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    ENCRYPTED_KEY_FIELD_NUMBER: _ClassVar[int]
    STRIPE_STATISTICS_FIELD_NUMBER: _ClassVar[int]
    FILE_STATISTICS_FIELD_NUMBER: _ClassVar[int]
    root: int
    key: int
    encrypted_key: bytes
    stripe_statistics: _containers.RepeatedCompositeFieldContainer[Stream]
    file_statistics: bytes
    def __init__(self, root: _Optional[int] = ..., key: _Optional[int] = ..., encrypted_key: _Optional[bytes] = ..., stripe_statistics: _Optional[_Iterable[_Union[Stream, _Mapping]]] = ..., file_statistics: _Optional[bytes] = ...) -> None: ...

class Encryption(_message.Message):
    __slots__ = ("mask", "key", "variants", "key_provider")
    MASK_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    VARIANTS_FIELD_NUMBER: _ClassVar[int]
    KEY_PROVIDER_FIELD_NUMBER: _ClassVar[int]
    mask: _containers.RepeatedCompositeFieldContainer[DataMask]
    key: _containers.RepeatedCompositeFieldContainer[EncryptionKey]
    variants: _containers.RepeatedCompositeFieldContainer[EncryptionVariant]
    key_provider: KeyProviderKind
    def __init__(self, mask: _Optional[_Iterable[_Union[DataMask, _Mapping]]] = ..., key: _Optional[_Iterable[_Union[EncryptionKey, _Mapping]]] = ..., variants: _Optional[_Iterable[_Union[EncryptionVariant, _Mapping]]] = ..., key_provider: _Optional[_Union[KeyProviderKind, str]] = ...) -> None: ...

class Footer(_message.Message):
    __slots__ = ("header_length", "content_length", "stripes", "types", "metadata", "number_of_rows", "statistics", "row_index_stride", "writer", "encryption", "calendar", "software_version")
    HEADER_LENGTH_FIELD_NUMBER: _ClassVar[int]
    CONTENT_LENGTH_FIELD_NUMBER: _ClassVar[int]
    STRIPES_FIELD_NUMBER: _ClassVar[int]
    TYPES_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    NUMBER_OF_ROWS_FIELD_NUMBER: _ClassVar[int]
    STATISTICS_FIELD_NUMBER: _ClassVar[int]
    ROW_INDEX_STRIDE_FIELD_NUMBER: _ClassVar[int]
    WRITER_FIELD_NUMBER: _ClassVar[int]
    ENCRYPTION_FIELD_NUMBER: _ClassVar[int]
    CALENDAR_FIELD_NUMBER: _ClassVar[int]
    SOFTWARE_VERSION_FIELD_NUMBER: _ClassVar[int]
    header_length: int
    content_length: int
    stripes: _containers.RepeatedCompositeFieldContainer[StripeInformation]
    types: _containers.RepeatedCompositeFieldContainer[Type]
    metadata: _containers.RepeatedCompositeFieldContainer[UserMetadataItem]
    number_of_rows: int
    statistics: _containers.RepeatedCompositeFieldContainer[ColumnStatistics]
    row_index_stride: int
    writer: int
    encryption: Encryption
    calendar: CalendarKind
    software_version: str
    def __init__(self, header_length: _Optional[int] = ..., content_length: _Optional[int] = ..., stripes: _Optional[_Iterable[_Union[StripeInformation, _Mapping]]] = ..., types: _Optional[_Iterable[_Union[Type, _Mapping]]] = ..., metadata: _Optional[_Iterable[_Union[UserMetadataItem, _Mapping]]] = ..., number_of_rows: _Optional[int] = ..., statistics: _Optional[_Iterable[_Union[ColumnStatistics, _Mapping]]] = ..., row_index_stride: _Optional[int] = ..., writer: _Optional[int] = ..., encryption: _Optional[_Union[Encryption, _Mapping]] = ..., calendar: _Optional[_Union[CalendarKind, str]] = ..., software_version: _Optional[str] = ...) -> None: ...

class PostScript(_message.Message):
    __slots__ = ("footer_length", "compression", "compression_block_size", "version", "metadata_length", "writer_version", "stripe_statistics_length", "magic")
    FOOTER_LENGTH_FIELD_NUMBER: _ClassVar[int]
    COMPRESSION_FIELD_NUMBER: _ClassVar[int]
    COMPRESSION_BLOCK_SIZE_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    METADATA_LENGTH_FIELD_NUMBER: _ClassVar[int]
    WRITER_VERSION_FIELD_NUMBER: _ClassVar[int]
    STRIPE_STATISTICS_LENGTH_FIELD_NUMBER: _ClassVar[int]
    MAGIC_FIELD_NUMBER: _ClassVar[int]
    footer_length: int
    compression: CompressionKind
    compression_block_size: int
    version: _containers.RepeatedScalarFieldContainer[int]
    metadata_length: int
    writer_version: int
    stripe_statistics_length: int
    magic: str
    def __init__(self, footer_length: _Optional[int] = ..., compression: _Optional[_Union[CompressionKind, str]] = ..., compression_block_size: _Optional[int] = ..., version: _Optional[_Iterable[int]] = ..., metadata_length: _Optional[int] = ..., writer_version: _Optional[int] = ..., stripe_statistics_length: _Optional[int] = ..., magic: _Optional[str] = ...) -> None: ...

class FileTail(_message.Message):
    __slots__ = ("postscript", "footer", "file_length", "postscript_length")
    POSTSCRIPT_FIELD_NUMBER: _ClassVar[int]
    FOOTER_FIELD_NUMBER: _ClassVar[int]
    FILE_LENGTH_FIELD_NUMBER: _ClassVar[int]
    POSTSCRIPT_LENGTH_FIELD_NUMBER: _ClassVar[int]
    postscript: PostScript
    footer: Footer
    file_length: int
    postscript_length: int
    def __init__(self, postscript: _Optional[_Union[PostScript, _Mapping]] = ..., footer: _Optional[_Union[Footer, _Mapping]] = ..., file_length: _Optional[int] = ..., postscript_length: _Optional[int] = ...) -> None: ...
