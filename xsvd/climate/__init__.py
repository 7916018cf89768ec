"""Climate fields: EOF statistics (eofs' and xeofs' conventions), rotation, area weights."""
